"""Reference: an Explicit mesh, inputs placed with device_put, and the product's layout
stated with out_sharding, so the result is born in the requested layout."""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def _spec(entries):
    # JSON lists: None stays None, a name stays a name, a list of names becomes a tuple.
    return P(*[tuple(e) if isinstance(e, list) else e for e in entries])


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))  # Explicit axes by default
    with jax.set_mesh(mesh):
        x = jax.device_put(x, _spec(x_spec))   # the sharding is now part of x's type
        w = jax.device_put(w, _spec(w_spec))
        # out_sharding says where the result lives; it also settles the cases JAX refuses
        # to guess (sharded contracting dimensions, one mesh axis on two result dimensions).
        y = jnp.dot(x, w, out_sharding=_spec(out_spec))
    return [x, w, y]
