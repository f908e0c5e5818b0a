# Wrong: reports len(mesh.devices) as the mesh size; len() of a NumPy grid is the length of
# its FIRST axis, not the number of devices (mesh.size).
import math

import jax
from jax.sharding import AxisType


def build_mesh(shape, names):
    mesh = jax.make_mesh(tuple(shape), tuple(names), axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[:math.prod(shape)])
    return {"axis_names": list(mesh.axis_names), "axis_sizes": list(mesh.shape.values()),
            "size": len(mesh.devices), "device_ids": mesh.device_ids}
