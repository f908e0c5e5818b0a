# Runtime error: places a real array with the sharding but never catches JAX's
# IndivisibleError, so any layout that does not divide evenly crashes the call.
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def shard_shape(shape, mesh_shape, axis_names, spec):
    devices = np.array(jax.devices()[:math.prod(mesh_shape)]).reshape(mesh_shape)
    mesh = Mesh(devices, tuple(axis_names))
    pspec = P(*[tuple(e) if isinstance(e, list) else e for e in spec])
    x = jax.device_put(jnp.zeros(shape), NamedSharding(mesh, pspec))
    return list(x.sharding.shard_shape(x.shape))
