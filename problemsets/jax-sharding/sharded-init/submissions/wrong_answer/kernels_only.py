# Wrong: shards only the kernels (by hand, in the jitted init) and leaves the biases
# replicated, though up.bias is annotated ("model",).
import jax
from flax import nnx
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

init = nnx.initializers


class MLP(nnx.Module):
    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(d_in, d_hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("model",)), rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", None)),
            bias_init=nnx.with_partitioning(init.normal(0.02), (None,)), rngs=rngs)


def sharded_init(seed, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    @jax.jit
    def create():
        with nnx.use_eager_sharding(False):
            model = MLP(*sizes, rngs=nnx.Rngs(seed))
        state = nnx.state(model).to_pure_dict()
        specs = {"up": {"kernel": P(None, "model"), "bias": P()},
                 "down": {"kernel": P("model", None), "bias": P()}}
        return jax.lax.with_sharding_constraint(state, specs)

    with jax.set_mesh(mesh):
        return create()
