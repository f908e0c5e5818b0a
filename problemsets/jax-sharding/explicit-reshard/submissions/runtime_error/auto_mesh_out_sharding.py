# Runtime error: builds the classic Auto mesh, then asks for the layout with out_sharding,
# which only takes Explicit axes ("cannot contain axis names that are of type Auto").
import jax
import jax.numpy as jnp
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        x = jax.device_put(x, P(*x_spec))
        w = jax.device_put(w, P(*w_spec))
        y = jnp.dot(x, w, out_sharding=P(*out_spec))
    return [x, w, y]
