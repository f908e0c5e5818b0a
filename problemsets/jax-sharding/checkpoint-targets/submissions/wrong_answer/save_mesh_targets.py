# Wrong: builds the targets on the mesh the checkpoint was saved from, not the restore mesh;
# right only when the two meshes happen to be the same.
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

init = nnx.initializers


class Model(nnx.Module):
    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(d_in, d_hidden, param_dtype=jnp.bfloat16,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("data", "model")),
            bias_init=nnx.with_partitioning(init.zeros_init(), ("model",)), rngs=rngs)
        self.norm = nnx.LayerNorm(d_hidden, rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out, param_dtype=jnp.bfloat16,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", "data")),
            bias_init=nnx.with_partitioning(init.zeros_init(), (None,)), rngs=rngs)


def restore_targets(sizes, axis_names, save_shape, restore_shape):
    mesh = jax.make_mesh(tuple(save_shape), tuple(axis_names),
                         axis_types=(AxisType.Auto,) * len(axis_names))
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: Model(*sizes, rngs=nnx.Rngs(0)))
    state = nnx.state(abstract)
    shardings = nnx.get_named_sharding(state, mesh)
    return jax.tree.map(
        lambda a, s: {"shape": list(a.shape), "dtype": a.dtype.name, "sharding": s}, state, shardings)
