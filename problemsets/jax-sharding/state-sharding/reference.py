"""Reference: split an abstract nnx.Linear (nnx.eval_shape: the shapes and dtypes of its
state, no weight computed), map its state to PartitionSpecs, count the leaves."""

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P


def _spec(param):
    # Column sharding: the 2-D kernel splits its output features, the 1-D bias its only axis.
    return P(None, "model") if param.ndim == 2 else P("model")


def state_to_sharded_layout(seed, x, features):
    model = nnx.eval_shape(lambda: nnx.Linear(x.shape[-1], int(features),
                                              rngs=nnx.Rngs(int(seed))))
    _graphdef, state = nnx.split(model)
    specs = jax.tree_util.tree_map(_spec, state)
    n_leaves = len(jax.tree_util.tree_leaves(specs))
    return jnp.array([n_leaves], dtype=jnp.int32)
