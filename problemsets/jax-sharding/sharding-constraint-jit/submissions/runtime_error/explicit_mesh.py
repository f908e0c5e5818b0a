# Runtime error: jax.make_mesh without axis_types makes Explicit axes in jax 0.10, and
# with_sharding_constraint refuses a NamedSharding over Explicit axes ("can only refer to
# Auto axes of the mesh").
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    mesh = jax.make_mesh(tuple(mesh_shape), tuple(axis_names))
    sharding = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))

    @jax.jit
    def layer(x, w):
        h = jax.lax.with_sharding_constraint(jax.nn.relu(x @ w), sharding)
        return h * h

    return layer(x, w)
