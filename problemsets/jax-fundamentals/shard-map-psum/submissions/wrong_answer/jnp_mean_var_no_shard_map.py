# Wrong answer: the right numbers with no shard_map at all: jnp.mean and jnp.var of the
# sharded array under jax.jit. XLA's partitioner even splits the reduction over the devices
# by itself and inserts an all-reduce, but the program has no shard_map (no
# sdy.manual_computation): the per-device code and its psum are not the student's.
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


@jax.jit
def _stats(x):
    return {"mean": jnp.mean(x, axis=0), "var": jnp.var(x, axis=0)}


def global_mean_var(x, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data",))
    return _stats(jax.device_put(x, NamedSharding(mesh, P("data", None))))
