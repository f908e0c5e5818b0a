# Wrong: writes P(spec) instead of P(*spec). The whole list becomes the FIRST entry, so
# ["data", "model"] means "split the rows over data and model together", not rows over
# data and columns over model.
import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    names = tuple(axis_names)
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    sharding = NamedSharding(mesh, P(spec))

    @jax.jit
    def layer(x, w):
        h = jax.lax.with_sharding_constraint(jax.nn.relu(x @ w), sharding)
        return h * h

    return layer(x, w)
