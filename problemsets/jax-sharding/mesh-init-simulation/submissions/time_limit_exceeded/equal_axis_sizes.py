# Time limit: assumes every mesh axis has the same size; no integer s has s ** 2 == 8, so the
# search loops forever for two axes.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    size = 1
    while size ** k != len(jax.devices()):
        size += 1
    mesh = jax.make_mesh((size,) * k, ("replica", "data", "model")[-k:],
                         axis_types=(AxisType.Auto,) * k)
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(
            lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed))))
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(abstract)))
    return jnp.array([int(features), k, n_leaves])
