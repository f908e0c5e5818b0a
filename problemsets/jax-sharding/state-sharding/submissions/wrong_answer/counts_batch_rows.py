# Wrong: maps over the rows of the batch x instead of the model's state, so it counts N.
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def state_to_sharded_layout(seed, x, features):
    specs = jax.tree_util.tree_map(lambda row: P("model"), list(x))
    return jnp.array([len(jax.tree_util.tree_leaves(specs))])
