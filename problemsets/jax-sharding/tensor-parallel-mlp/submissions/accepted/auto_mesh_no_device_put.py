# Accepted: an Auto-typed mesh built by hand from jax.devices(), passed to jax.shard_map with
# mesh=. On Auto axes shard_map reshards the single-device inputs itself, so there is no
# device_put; the psum and the bias are written in one line.
import jax
import numpy as np
from jax.sharding import AxisType, Mesh
from jax.sharding import PartitionSpec as P


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    d, m = (int(s) for s in mesh_shape)
    mesh = Mesh(np.array(jax.devices()[: d * m]).reshape(d, m), ("data", "model"),
                axis_types=(AxisType.Auto, AxisType.Auto))

    def local(x, w1, b1, w2, b2):
        return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2

    f = jax.shard_map(local, mesh=mesh,
                      in_specs=(P("data"), P(None, "model"), P("model"), P("model"), P()),
                      out_specs=P("data"))
    return jax.jit(f)(x, w1, b1, w2, b2)
