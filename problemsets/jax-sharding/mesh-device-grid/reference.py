"""Reference: build an Auto-axis mesh from the first prod(shape) devices and describe it."""

import math

import jax
import numpy as np
from jax.sharding import AxisType


def build_mesh(shape, names):
    shape, names = tuple(int(s) for s in shape), tuple(str(n) for n in names)
    n = math.prod(shape)
    # jax.make_mesh defaults to Explicit axes in jax 0.10: ask for the classic Auto ones.
    # Passing the devices makes the choice (the first n, in jax.devices() order) explicit.
    mesh = jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[:n])
    return {
        "axis_names": list(mesh.axis_names),
        "axis_sizes": np.array([mesh.shape[a] for a in mesh.axis_names], dtype=np.int32),
        "size": int(mesh.size),                      # devices in the mesh, all axes together
        "device_ids": np.asarray(mesh.device_ids),   # same shape as the mesh
    }
