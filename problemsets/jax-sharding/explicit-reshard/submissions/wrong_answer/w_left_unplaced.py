# Wrong: places x but forgets w; the product still works (w is broadcast from device 0), but
# the returned w is not on the mesh at all.
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    spec = lambda s: P(*[tuple(e) if isinstance(e, list) else e for e in s])
    with jax.set_mesh(mesh):
        x = jax.device_put(x, spec(x_spec))
        y = jnp.dot(x, w, out_sharding=spec(out_spec))
    return [x, w, y]
