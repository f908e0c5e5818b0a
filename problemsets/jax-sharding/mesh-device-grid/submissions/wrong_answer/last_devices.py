# Wrong: takes the LAST prod(shape) devices instead of the first ones; only shows when the
# mesh uses fewer than all 8 devices.
import math

import jax
import numpy as np
from jax.sharding import Mesh


def build_mesh(shape, names):
    n = math.prod(shape)
    mesh = Mesh(np.array(jax.devices()[-n:]).reshape(shape), tuple(names))
    return {"axis_names": list(mesh.axis_names), "axis_sizes": np.array(mesh.devices.shape),
            "size": mesh.size, "device_ids": mesh.device_ids}
