# Wrong: applies the constraint to the input x instead of the intermediate h; x has shape
# (N, K), so the spec's second entry splits the contracted dimension K and the layout XLA
# derives for the result is not the requested one.
import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    names = tuple(axis_names)
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    sharding = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))

    @jax.jit
    def layer(x, w):
        x = jax.lax.with_sharding_constraint(x, sharding)
        h = jax.nn.relu(x @ w)
        return h * h

    return layer(x, w)
