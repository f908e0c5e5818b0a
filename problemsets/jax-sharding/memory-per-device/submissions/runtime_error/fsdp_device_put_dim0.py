# Runtime error: under FSDP it places every parameter with its first dimension split over
# all devices; jax.device_put raises IndivisibleError for a parameter such as [3, 64].
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

DTYPES = {2: "float16", 4: "float32"}


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    total = 0
    for shape, tp in zip(shapes, tp_specs):
        if strategy == "tp":
            spec = P(*tp)
        elif strategy == "fsdp":
            spec = P(("data", "model"))  # BUG: dim 0 need not divide
        else:
            spec = P()
        x = jax.device_put(np.zeros(shape, DTYPES[dtype_bytes]), NamedSharding(mesh, spec))
        total += x.addressable_shards[0].data.nbytes
    return [total, total, 2 * total, 4 * total]
