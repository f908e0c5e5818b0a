# Wrong: fills the mesh from jax.devices() in reverse order, so device 0 ends up last.
import math

import jax
import numpy as np
from jax.sharding import Mesh


def build_mesh(shape, names):
    n = math.prod(shape)
    mesh = Mesh(np.array(jax.devices()[::-1][:n]).reshape(shape), tuple(names))
    return {"axis_names": list(mesh.axis_names), "axis_sizes": np.array(mesh.devices.shape),
            "size": mesh.size, "device_ids": mesh.device_ids}
