# Wrong: counts the parameters' elements (in_dim * features + features), not the arrays.
import jax
import jax.numpy as jnp
from flax import nnx


def mesh_init_simulate(seed, x, features, mesh_axes):
    abstract = nnx.eval_shape(
        lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed))))
    n_params = sum(a.size for a in jax.tree_util.tree_leaves(nnx.state(abstract)))
    return jnp.array([int(features), int(mesh_axes), n_params])
