# Accepted: builds the mesh from jax.devices() with Mesh (Auto axes by default), makes it
# current with jax.set_mesh and constrains with a bare PartitionSpec, which then refers to
# the current mesh; the constraint sits on the pre-activation, relu and square keep it.
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), tuple(axis_names))
    pspec = P(*(tuple(e) if isinstance(e, list) else e for e in spec))

    def layer(x, w):
        z = jax.lax.with_sharding_constraint(jnp.dot(x, w), pspec)
        return jnp.square(jnp.maximum(z, 0.0))

    with jax.set_mesh(mesh):
        return jax.jit(layer)(x, w)
