# Runtime error: no psum. Each device computes the mean and variance of its own rows only,
# and out_specs=P() claims the results are the same on every device. They are not (they
# vary over 'data'), and shard_map's check (check_vma=True, the default) refuses to trace
# it: "out_specs ... require replication which can't be statically inferred".
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def global_mean_var(x, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data",))

    def moments(xb):
        return {"mean": jnp.mean(xb, axis=0), "var": jnp.var(xb, axis=0)}

    f = jax.jit(jax.shard_map(moments, mesh=mesh, in_specs=P("data", None), out_specs=P()))
    return f(jax.device_put(x, NamedSharding(mesh, P("data", None))))
