# Wrong: returns the bare PartitionSpecs (nnx.get_partition_spec) as the "sharding"; a spec
# names mesh axes but no mesh, so it is not a restore target.
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
    mesh = jax.make_mesh(tuple(restore_shape), tuple(axis_names),
                         axis_types=(AxisType.Auto,) * len(axis_names))
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: Model(*sizes, rngs=nnx.Rngs(0)))
    state = nnx.state(abstract)
    specs = nnx.get_partition_spec(state)
    return jax.tree.map(
        lambda a, spec: {"shape": list(a.shape), "dtype": a.dtype.name, "sharding": spec},
        state, specs, is_leaf=lambda x: isinstance(x, P))
