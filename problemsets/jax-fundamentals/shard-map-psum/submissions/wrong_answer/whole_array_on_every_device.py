# Wrong answer: x is replicated (every device holds all N rows) and shard_map gets
# in_specs=P(), so every device computes the whole mean and variance by itself and no psum
# is needed. The values are right; but in the compiled program the rows arrive split over
# 'data' and XLA must all-gather them first, and every device does all of the work.
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def global_mean_var(x, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data",))

    def moments(xa):
        return {"mean": jnp.mean(xa, axis=0), "var": jnp.var(xa, axis=0)}

    f = jax.jit(jax.shard_map(moments, mesh=mesh, in_specs=P(), out_specs=P()))
    return f(jax.device_put(x, NamedSharding(mesh, P())))
