# Wrong: the placement is right, but the rows table is computed as if the N rows were split
# over all n devices (N // n each) rather than over the 'data' axis size only.
import math

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_batch(x, mesh_shape, axis_names):
    n = math.prod(mesh_shape)
    mesh = jax.make_mesh(tuple(mesh_shape), tuple(axis_names),
                         axis_types=(AxisType.Auto,) * len(mesh_shape),
                         devices=jax.devices()[:n])
    batch = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    per_device = x.shape[0] // n
    rows = np.array([[k * per_device, (k + 1) * per_device] for k in range(n)])
    return {"batch": batch, "rows": rows}
