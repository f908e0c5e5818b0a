# Wrong: places the inputs and returns x @ w in whatever layout the sharding rules give it,
# never asking for out_spec; right only when the rules happen to give the requested layout
# (and JAX raises where they cannot decide).
import jax
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    with jax.set_mesh(mesh):
        x = jax.device_put(x, P(*x_spec))
        w = jax.device_put(w, P(*w_spec))
        y = x @ w
    return [x, w, y]
