"""Reference: device_put the batch with its rows split over 'data', then read back which
rows every device holds from the array's own shards."""

import math

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_batch(x, mesh_shape, axis_names):
    shape = tuple(int(s) for s in mesh_shape)
    mesh = jax.make_mesh(shape, tuple(axis_names), axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[:math.prod(shape)])
    # Rows split over 'data'; features whole. Every other mesh axis replicates the rows.
    batch = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    rows = []
    for shard in sorted(batch.addressable_shards, key=lambda s: s.device.id):
        start, stop, _ = shard.index[0].indices(batch.shape[0])
        rows.append([start, stop])
    return {"batch": batch, "rows": np.array(rows, dtype=np.int32)}
