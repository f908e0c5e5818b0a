"""Reference: really lay the parameters, their gradients and Adam's two moments out on the
mesh, then read how many bytes device 0 holds of each."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

DTYPES = {2: jnp.bfloat16, 4: jnp.float32}


def _spec(shape, tp_spec, strategy, n_devices):
    if strategy == "dp":
        return P()  # every device keeps a full copy
    if strategy == "tp":
        return P(*tp_spec)  # as annotated; the "data" axis replicates
    # fsdp: the first dimension that splits evenly goes over both axes, i.e. all devices.
    for i, size in enumerate(shape):
        if size % n_devices == 0:
            entries = [None] * len(shape)
            entries[i] = ("data", "model")
            return P(*entries)
    return P()  # nothing divides: replicated


def _bytes_on_one_device(tree):
    return sum(x.addressable_shards[0].data.nbytes for x in jax.tree_util.tree_leaves(tree))


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    dtype = DTYPES[dtype_bytes]
    shardings = [
        NamedSharding(mesh, _spec(tuple(s), t, strategy, mesh.size))
        for s, t in zip(shapes, tp_specs)
    ]
    params = [jax.device_put(np.zeros(s, dtype), sh) for s, sh in zip(shapes, shardings)]

    # Gradients: DP all-reduces them (replicated), FSDP reduce-scatters them and TP keeps
    # them next to their parameter, so in all three they take the parameter's layout.
    def loss(ps):
        return sum(jnp.sum(jnp.square(p.astype(jnp.float32))) for p in ps)

    grads = jax.jit(jax.grad(loss), out_shardings=shardings)(params)

    # Adam keeps two moments (mu, nu) shaped, typed and sharded like the parameters.
    adam_state = optax.adam(1e-3).init(params)[0]
    moments = (adam_state.mu, adam_state.nu)  # the scalar step count is not counted

    sizes = [_bytes_on_one_device(params), _bytes_on_one_device(grads),
             _bytes_on_one_device(moments)]
    return np.array(sizes + [sum(sizes)], dtype=np.int64)
