# Wrong (probe 'one-program'): computes relu(x @ w) ** 2 with NumPy on the host and places
# the result in the requested layout. The values and the layout are right, but nothing ran
# on the mesh and there is no jitted computation whose activation could be constrained:
# the judge cannot compile it as one program.
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    h = np.maximum(np.asarray(x) @ np.asarray(w), 0.0)
    names = tuple(axis_names)
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    entries = [tuple(e) if isinstance(e, list) else e for e in spec]
    return jax.device_put(h * h, NamedSharding(mesh, P(*entries)))
