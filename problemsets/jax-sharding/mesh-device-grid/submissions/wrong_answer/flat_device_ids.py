# Wrong: reports the device ids as a flat list ([d.id for d in mesh.devices.flat]) instead of
# a grid with the mesh's shape; right only for 1-D meshes.
import math

import jax
from jax.sharding import AxisType


def build_mesh(shape, names):
    mesh = jax.make_mesh(tuple(shape), tuple(names), axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[:math.prod(shape)])
    return {"axis_names": list(mesh.axis_names), "axis_sizes": list(mesh.shape.values()),
            "size": mesh.size, "device_ids": [d.id for d in mesh.devices.flat]}
