# Wrong: reports mesh.size (the number of devices in the mesh) instead of its number of axes.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    shape = {1: (8,), 2: (2, 4), 3: (2, 2, 2)}[k]
    mesh = jax.make_mesh(shape, ("replica", "data", "model")[-k:], axis_types=(AxisType.Auto,) * k)
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(
            lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed))))
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(abstract)))
    return jnp.array([abstract.kernel.shape[1], mesh.size, n_leaves])
