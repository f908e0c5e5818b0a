# Accepted: builds the mesh by reshaping jax.devices() and runs a real (concrete) init
# under it instead of an abstract one; returns a NumPy array.
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    shape = {1: (8,), 2: (2, 4), 3: (2, 2, 2)}[k]
    names = ("replica", "data", "model")[-k:]
    mesh = Mesh(np.array(jax.devices()).reshape(shape), names)
    with jax.set_mesh(mesh):
        model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    leaves = jax.tree_util.tree_leaves(nnx.state(model, nnx.Param))
    return np.array([model.out_features, mesh.devices.ndim, len(leaves)])
