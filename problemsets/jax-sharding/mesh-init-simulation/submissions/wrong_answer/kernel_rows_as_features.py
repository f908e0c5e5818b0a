# Wrong: reads the kernel's first dimension (in_dim) where the output features are asked.
import jax
import jax.numpy as jnp
from flax import nnx


def mesh_init_simulate(seed, x, features, mesh_axes):
    abstract = nnx.eval_shape(
        lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed))))
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(abstract)))
    return jnp.array([abstract.kernel.shape[0], int(mesh_axes), n_leaves])
