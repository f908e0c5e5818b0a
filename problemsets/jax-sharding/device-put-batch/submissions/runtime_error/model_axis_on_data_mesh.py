# Runtime error: hard-codes P("model", None); on a 1-D mesh whose only axis is "data" the
# NamedSharding names an axis that does not exist and JAX raises.
import math

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_batch(x, mesh_shape, axis_names):
    mesh = jax.make_mesh(tuple(mesh_shape), tuple(axis_names),
                         axis_types=(AxisType.Auto,) * len(mesh_shape),
                         devices=jax.devices()[:math.prod(mesh_shape)])
    batch = jax.device_put(x, NamedSharding(mesh, P("model", None)))
    rows = [list(s.index[0].indices(x.shape[0])[:2])
            for s in sorted(batch.addressable_shards, key=lambda s: s.device.id)]
    return {"batch": batch, "rows": np.array(rows)}
