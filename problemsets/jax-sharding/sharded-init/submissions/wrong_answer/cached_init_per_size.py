# Wrong: caches the compiled init per model size to save compiles, but the cached function's
# out_shardings were built for the first mesh it saw: a later call with the same sizes on
# another mesh silently returns arrays laid out on the old mesh.
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


_CACHE = {}


def _init_fn(sizes, mesh):
    key = tuple(sizes)
    if key not in _CACHE:
        def make(rng_key):
            return MLP(*sizes, rngs=nnx.Rngs(rng_key))

        with jax.set_mesh(mesh):
            abstract = nnx.eval_shape(lambda: make(jax.random.key(0)))
        _, abstract_state = nnx.split(abstract)
        shardings = nnx.get_named_sharding(abstract_state, mesh)
        _CACHE[key] = jax.jit(lambda k: nnx.state(make(k)), out_shardings=shardings)
    return _CACHE[key]


def sharded_init(seed, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        return _init_fn(sizes, mesh)(jax.random.key(seed))
