# Wrong: returns [mesh_axes, features, n_leaves]; the first two entries are swapped.
import jax
import jax.numpy as jnp
from flax import nnx


def mesh_init_simulate(seed, x, features, mesh_axes):
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(model)))
    return jnp.array([int(mesh_axes), int(features), n_leaves])
