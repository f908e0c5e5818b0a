# Wrong: converts spec entries that are strings and treats anything else as None, so a
# dimension split over both axes (["data", "model"]) comes out replicated.
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    spec = lambda s: P(*[e if isinstance(e, str) else None for e in s])
    with jax.set_mesh(mesh):
        x = jax.device_put(x, spec(x_spec))
        w = jax.device_put(w, spec(w_spec))
        y = jnp.dot(x, w, out_sharding=spec(out_spec))
    return [x, w, y]
