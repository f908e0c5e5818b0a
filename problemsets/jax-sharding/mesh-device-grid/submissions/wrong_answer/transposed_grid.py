# Wrong: lays the devices out column-major (reshape with order="F"), which transposes the
# grid: for (2, 4) the first row is [0, 2, 4, 6] instead of [0, 1, 2, 3].
import math

import jax
import numpy as np
from jax.sharding import Mesh


def build_mesh(shape, names):
    n = math.prod(shape)
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(shape, order="F"), tuple(names))
    return {"axis_names": list(mesh.axis_names), "axis_sizes": np.array(mesh.devices.shape),
            "size": mesh.size, "device_ids": mesh.device_ids}
