# Time limit: walks the spec tree by hand but reads the stack top without popping it, forever.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P


def state_to_sharded_layout(seed, x, features):
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    _, state = nnx.split(model)
    specs = jax.tree_util.tree_map(lambda a: P(None, "model") if a.ndim == 2 else P("model"), state)
    stack, count = [specs.to_pure_dict()], 0
    while stack:
        node = stack[-1]  # should be stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        else:
            count += 1
    return jnp.array([count])
