# Runtime error: reshapes ALL of jax.devices() into the mesh shape; fine for 8-device meshes,
# but reshaping 8 devices into (2, 2) raises ValueError.
import jax
import numpy as np
from jax.sharding import Mesh


def build_mesh(shape, names):
    mesh = Mesh(np.array(jax.devices()).reshape(shape), tuple(names))
    return {"axis_names": list(mesh.axis_names), "axis_sizes": np.array(mesh.devices.shape),
            "size": mesh.size, "device_ids": mesh.device_ids}
