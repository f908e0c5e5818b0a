# Accepted: places a zeros array with the sharding and reads a real shard's shape; for an
# invalid layout it catches JAX's error and parses the dimension and piece count out of its
# message ("array axis 0 is partitioned 4 times").
import math
import re

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_shape(shape, mesh_shape, axis_names, spec):
    devices = np.array(jax.devices()[:math.prod(mesh_shape)]).reshape(mesh_shape)
    mesh = Mesh(devices, tuple(axis_names))
    pspec = P(*[tuple(e) if isinstance(e, list) else e for e in spec])
    try:
        x = jax.device_put(np.zeros(shape, np.int8), NamedSharding(mesh, pspec))
    except ValueError as err:
        m = re.search(r"array axis (\d+) is partitioned (\d+) times", str(err))
        return {"error": "not_divisible", "dim": int(m.group(1)), "pieces": int(m.group(2))}
    return tuple(x.addressable_shards[0].data.shape)
