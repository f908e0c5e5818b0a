# Compile error: jax.sharding.use_mesh no longer exists in jax 0.10, so the import fails.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import use_mesh


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    mesh = jax.make_mesh({1: (8,), 2: (2, 4), 3: (2, 2, 2)}[k], ("replica", "data", "model")[-k:])
    with use_mesh(mesh):
        model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    return jnp.array([int(features), k, len(jax.tree_util.tree_leaves(nnx.state(model)))])
