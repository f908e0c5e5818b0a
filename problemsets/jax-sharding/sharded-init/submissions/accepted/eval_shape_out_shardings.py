# Accepted: the jax.jit route. nnx.eval_shape traces the constructor (nothing allocated),
# nnx.get_named_sharding turns the abstract state into NamedShardings, and jax.jit with
# out_shardings compiles an init whose outputs are born sharded; nnx.merge rebuilds the model.
# The compiled init is cached per (sizes, mesh) with the key as a traced argument.
import functools

import jax
from flax import nnx
from jax.sharding import AxisType

init = nnx.initializers


class MLP(nnx.Module):
    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(d_in, d_hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("model",)), rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", None)),
            bias_init=nnx.with_partitioning(init.normal(0.02), (None,)), rngs=rngs)


@functools.cache
def _compiled_init(sizes, mesh_shape):
    # Keyed on the mesh as well as the sizes: the out_shardings below bind this mesh.
    mesh = jax.make_mesh(mesh_shape, ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def make(key):
        return MLP(*sizes, rngs=nnx.Rngs(key))

    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: make(jax.random.key(0)))
    graphdef, abstract_state = nnx.split(abstract)
    shardings = nnx.get_named_sharding(abstract_state, mesh)
    init_fn = jax.jit(lambda key: nnx.state(make(key)), out_shardings=shardings)
    return mesh, graphdef, init_fn


def sharded_init(seed, sizes, mesh_shape):
    mesh, graphdef, init_fn = _compiled_init(tuple(sizes), tuple(mesh_shape))
    with jax.set_mesh(mesh):
        state = init_fn(jax.random.key(seed))
    model = nnx.merge(graphdef, state)
    return nnx.state(model).to_pure_dict()
