"""Reference: the per-column mean and variance of a row-sharded batch with jax.shard_map.

Each device reduces its own rows to three partial statistics (its row count, the column
sums, the column sums of squares); one psum over 'data' adds them up on every device, and
every device then turns the totals into the mean and the variance, so the results are the
same everywhere (out_specs P(): replicated).
"""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _local_stats(xb):
    # xb: this device's rows, (N / devices, D).
    count = jnp.float32(xb.shape[0])
    partial = (count, jnp.sum(xb, axis=0), jnp.sum(xb * xb, axis=0))
    n, s1, s2 = jax.lax.psum(partial, "data")  # one all-reduce of the three partials
    mean = s1 / n
    return {"mean": mean, "var": s2 / n - mean * mean}


@jax.jit
def _mean_var(x):
    # mesh=None: jax.shard_map uses the mesh set by jax.set_mesh.
    return jax.shard_map(_local_stats, in_specs=P("data", None), out_specs=P())(x)


def global_mean_var(x, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data",))
    x = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    with jax.set_mesh(mesh):
        return _mean_var(x)
