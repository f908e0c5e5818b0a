"""The rows each device holds worked out from the machine's device count instead of the
size of the 'data' axis: right on a mesh of all 8 devices split only over 'data', wrong
wherever the mesh is smaller or 'data' is not the only axis (one device holds all 16 rows,
not 2)."""

import math

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_batch(x, mesh_shape, axis_names):
    shape = tuple(int(s) for s in mesh_shape)
    mesh = jax.make_mesh(shape, tuple(axis_names), axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[:math.prod(shape)])
    batch = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    per_device = x.shape[0] // jax.device_count()  # should be N // (size of 'data')
    data_axis = list(axis_names).index("data")
    rows = []
    for device_id in range(math.prod(shape)):
        coords = np.unravel_index(device_id, shape)
        start = int(coords[data_axis]) * per_device
        rows.append([start, start + per_device])
    return {"batch": batch, "rows": np.array(rows, dtype=np.int32)}
