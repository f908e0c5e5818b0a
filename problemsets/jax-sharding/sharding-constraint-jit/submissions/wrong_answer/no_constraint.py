# Wrong: makes the mesh current but never constrains h inside jit. The inputs are not laid
# out over the mesh, so nothing tells XLA to split the result: it comes back replicated.
import jax
from jax.sharding import AxisType


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    names = tuple(axis_names)
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))

    @jax.jit
    def layer(x, w):
        h = jax.nn.relu(x @ w)  # no with_sharding_constraint: spec is never used
        return h * h

    with jax.set_mesh(mesh):
        return layer(x, w)
