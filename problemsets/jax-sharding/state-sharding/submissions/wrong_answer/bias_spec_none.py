# Wrong: maps the bias to None ("replicated"); None is an empty subtree, so the bias leaf vanishes.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P


def state_to_sharded_layout(seed, x, features):
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    _, state = nnx.split(model)
    specs = jax.tree_util.tree_map(lambda a: P(None, "model") if a.ndim == 2 else None, state)
    return jnp.array([len(jax.tree_util.tree_leaves(specs))])
