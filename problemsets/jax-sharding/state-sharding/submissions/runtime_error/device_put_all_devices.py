# Runtime error: also places the state on an 8-device "model" mesh; IndivisibleError when
# features is not a multiple of 8.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def state_to_sharded_layout(seed, x, features):
    model = nnx.Linear(x.shape[-1], int(features), rngs=nnx.Rngs(int(seed)))
    _, state = nnx.split(model)
    specs = jax.tree_util.tree_map(lambda a: P(None, "model") if a.ndim == 2 else P("model"), state)
    mesh = jax.make_mesh((len(jax.devices()),), ("model",), axis_types=(AxisType.Auto,))
    shardings = jax.tree_util.tree_map(lambda p: NamedSharding(mesh, p), specs)
    sharded = jax.device_put(state, shardings)
    return jnp.array([len(jax.tree_util.tree_leaves(sharded))])
