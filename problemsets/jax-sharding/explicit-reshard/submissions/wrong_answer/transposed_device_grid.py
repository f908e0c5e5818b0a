# Wrong: builds the Explicit mesh by hand from a transposed device grid; names, sizes, specs
# and shard shapes are right, but whenever both axes are larger than 1 the devices hold
# each other's slices.
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    n_data, n_model = mesh_shape
    grid = np.array(jax.devices()).reshape(n_model, n_data).T
    mesh = Mesh(grid, ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    spec = lambda s: P(*[tuple(e) if isinstance(e, list) else e for e in s])
    with jax.set_mesh(mesh):
        x = jax.device_put(x, spec(x_spec))
        w = jax.device_put(w, spec(w_spec))
        y = jnp.dot(x, w, out_sharding=spec(out_spec))
    return [x, w, y]
