# Runtime error: forgets int(mesh_axes); (2,) * 2.0 raises TypeError.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType


def mesh_init_simulate(seed, x, features, mesh_axes):
    mesh = jax.make_mesh((2,) * mesh_axes, ("replica", "data", "model")[-mesh_axes:],
                         axis_types=(AxisType.Auto,) * mesh_axes)
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(
            lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed))))
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(abstract)))
    return jnp.array([int(features), len(mesh.axis_names), n_leaves])
