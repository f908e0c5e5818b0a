# Wrong: constrains correctly, then hands back jax.device_get(...), a NumPy array that
# carries no sharding: the values are right but the layout is gone.
import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    names = tuple(axis_names)
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    sharding = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))

    @jax.jit
    def layer(x, w):
        h = jax.lax.with_sharding_constraint(jax.nn.relu(x @ w), sharding)
        return h * h

    return jax.device_get(layer(x, w))
