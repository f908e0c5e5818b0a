# Accepted: annotates the layer with nnx.with_partitioning under a 1-device mesh and lets
# nnx.get_partition_spec build the spec tree; returns a NumPy array.
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh


def state_to_sharded_layout(seed, x, features):
    mesh = Mesh(np.array(jax.devices()[:1]), ("model",))
    with jax.set_mesh(mesh):
        model = nnx.Linear(
            x.shape[-1], int(features),
            kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(nnx.initializers.zeros_init(), ("model",)),
            rngs=nnx.Rngs(int(seed)),
        )
    specs = nnx.get_partition_spec(nnx.state(model))
    return np.array([len(jax.tree_util.tree_leaves(specs))])
