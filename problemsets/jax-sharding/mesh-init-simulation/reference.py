"""Reference: build the mesh, initialise the layer abstractly under it, and report
the output features, the mesh's axis count and the number of parameter arrays."""

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType

# How the 8 devices of the judge are laid out for each number of mesh axes.
MESH_SHAPES = {1: (8,), 2: (2, 4), 3: (2, 2, 2)}
AXIS_NAMES = {1: ("model",), 2: ("data", "model"), 3: ("replica", "data", "model")}


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    mesh = jax.make_mesh(MESH_SHAPES[k], AXIS_NAMES[k], axis_types=(AxisType.Auto,) * k)
    with jax.set_mesh(mesh):
        # eval_shape traces the init without running it: shapes and dtypes only.
        abstract = nnx.eval_shape(
            lambda: nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
        )
    n_leaves = len(jax.tree_util.tree_leaves(nnx.state(abstract)))
    out_features = abstract.kernel.shape[-1]
    return jnp.array([out_features, len(mesh.axis_names), n_leaves], dtype=jnp.int32)
