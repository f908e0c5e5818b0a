"""Reference: build an Auto-axis mesh, pin the hidden activation's layout inside jit with
jax.lax.with_sharding_constraint, and let the elementwise square inherit that layout."""

import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    names = tuple(axis_names)
    # with_sharding_constraint only accepts Auto axes; jax.make_mesh defaults to Explicit.
    mesh = jax.make_mesh(tuple(mesh_shape), names, axis_types=(AxisType.Auto,) * len(names))
    # Entries arrive as JSON lists: None, an axis name, or a list of axis names.
    entries = [tuple(e) if isinstance(e, list) else e for e in spec]
    hidden_sharding = NamedSharding(mesh, P(*entries))

    @jax.jit
    def layer(x, w):
        h = jax.nn.relu(x @ w)
        h = jax.lax.with_sharding_constraint(h, hidden_sharding)
        return h * h  # elementwise: the result keeps h's layout

    return layer(x, w)
