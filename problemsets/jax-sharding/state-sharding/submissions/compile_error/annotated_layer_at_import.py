# Compile error: builds an annotated layer at import time with no mesh context, which raises
# "An auto mesh context or metadata is required" while the module loads.
import jax
import jax.numpy as jnp
from flax import nnx

TEMPLATE = nnx.Linear(
    4, 8,
    kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model")),
    rngs=nnx.Rngs(0),
)


def state_to_sharded_layout(seed, x, features):
    specs = nnx.get_partition_spec(nnx.state(TEMPLATE))
    return jnp.array([len(jax.tree_util.tree_leaves(specs))])
