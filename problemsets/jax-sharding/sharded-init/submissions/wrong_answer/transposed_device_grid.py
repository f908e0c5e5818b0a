# Wrong: builds the mesh by hand from a transposed device grid. Axis names, sizes, specs and
# shard shapes are all right, but device i holds another device's slice whenever both mesh
# axes are larger than 1.
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh

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
    n_data, n_model = mesh_shape
    grid = np.array(jax.devices()).reshape(n_model, n_data).T
    mesh = Mesh(grid, ("data", "model"))  # Mesh(...) axes are Auto

    @nnx.jit
    def create():
        model = MLP(*sizes, rngs=nnx.Rngs(seed))
        state = nnx.state(model)
        nnx.update(model, jax.lax.with_sharding_constraint(state, nnx.get_partition_spec(state)))
        return model

    with jax.set_mesh(mesh):
        return nnx.state(create())
