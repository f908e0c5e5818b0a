# Runtime error: keeps jax.make_mesh's default Explicit axes and pins the layout with
# with_sharding_constraint, which on Explicit axes is an assertion and raises
# ("use jax.sharding.reshard").
import jax
from flax import nnx

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
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))

    @nnx.jit
    def create():
        with nnx.use_eager_sharding(False):
            model = MLP(*sizes, rngs=nnx.Rngs(seed))
        state = nnx.state(model)
        nnx.update(model, jax.lax.with_sharding_constraint(state, nnx.get_named_sharding(state, mesh)))
        return model

    with jax.set_mesh(mesh):
        return nnx.state(create())
