# Accepted: annotates kernel and bias, initialises abstractly under the mesh and counts the
# leaves of the NamedSharding tree that a jitted sharded init would use; returns a tuple.
import jax
from flax import nnx
from jax.sharding import AxisType


def mesh_init_simulate(seed, x, features, mesh_axes):
    k = int(mesh_axes)
    shape = {1: (8,), 2: (2, 4), 3: (2, 2, 2)}[k]
    names = ("replica", "data", "model")[-k:]
    mesh = jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * k)

    def make():
        return nnx.Linear(
            x.shape[-1], int(features),
            kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(nnx.initializers.zeros_init(), ("model",)),
            rngs=nnx.Rngs(int(seed)),
        )

    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(make)
    shardings = nnx.get_named_sharding(nnx.state(abstract), mesh)
    return (abstract.kernel.shape[1], len(mesh.shape), len(jax.tree_util.tree_leaves(shardings)))
