# Accepted: the spec tree mirrors the state, so counting the state's own leaves gives the
# same number; returned as a Python list.
import jax
from flax import nnx


def state_to_sharded_layout(seed, x, features):
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    return [len(jax.tree_util.tree_leaves(nnx.state(model)))]
