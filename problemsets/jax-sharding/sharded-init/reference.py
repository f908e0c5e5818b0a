"""Reference: create the annotated MLP inside nnx.jit under an Auto mesh, so every
parameter comes out of the compiled init already split over the devices."""

from functools import partial

import jax
from flax import nnx
from jax.sharding import AxisType

init = nnx.initializers


class MLP(nnx.Module):
    """The model of the statement: a column-parallel then a row-parallel Linear."""

    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(
            d_in, d_hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("model",)),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            d_hidden, d_out,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", None)),
            bias_init=nnx.with_partitioning(init.normal(0.02), (None,)),
            rngs=rngs,
        )


# sizes is static (it fixes the shapes); the key is traced, so a new seed reuses the compile.
@partial(nnx.jit, static_argnums=(1,))
def _create(key, sizes):
    model = MLP(*sizes, rngs=nnx.Rngs(key))
    state = nnx.state(model)
    # Pin every parameter to its annotated spec; XLA then computes each shard in place.
    specs = nnx.get_partition_spec(state)
    nnx.update(model, jax.lax.with_sharding_constraint(state, specs))
    return model


def sharded_init(seed, sizes, mesh_shape):
    # Auto axes: with_sharding_constraint is a layout request (on Explicit axes it asserts).
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = _create(jax.random.key(seed), tuple(sizes))
    return nnx.state(model)
