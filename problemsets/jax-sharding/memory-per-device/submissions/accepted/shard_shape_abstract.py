# Accepted: no allocation. Builds each parameter's NamedSharding and asks JAX for the
# per-device shard shape (sharding.shard_shape), then multiplies by the itemsize; returns a
# tuple of ints.
import math

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), ("data", "model"),
                axis_types=(AxisType.Auto, AxisType.Auto))
    n = mesh.size
    per_param = 0
    for shape, tp in zip(shapes, tp_specs):
        shape = tuple(shape)
        if strategy == "tp":
            spec = P(*tp)
        elif strategy == "fsdp":
            dims = [i for i, s in enumerate(shape) if s % n == 0]
            spec = P(*[("data", "model") if i == dims[0] else None
                       for i in range(len(shape))]) if dims else P()
        else:
            spec = P()
        per_param += math.prod(NamedSharding(mesh, spec).shard_shape(shape)) * dtype_bytes
    grads = per_param
    adam = 2 * per_param  # mu and nu
    return (per_param, grads, adam, per_param + grads + adam)
