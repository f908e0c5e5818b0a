# Runtime error: uses the Auto-mode tool jax.lax.with_sharding_constraint to get the result's
# layout; on Explicit axes it is an assertion and raises unless y already has that layout.
import jax
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    with jax.set_mesh(mesh):
        x = jax.device_put(x, P(*x_spec))
        w = jax.device_put(w, P(*w_spec))
        y = jax.lax.with_sharding_constraint(x @ w, P(*out_spec))
    return [x, w, y]
