# Accepted: pure arithmetic, no arrays at all. Each parameter's elements per device is its
# size divided by how many ways it is split; returns a Python list.
import math


def _ways(shape, tp_spec, strategy, data, model):
    if strategy == "dp":
        return 1
    if strategy == "tp":
        # Every annotated dimension is split over the "model" axis.
        return model ** sum(1 for entry in tp_spec if entry == "model")
    n = data * model
    return n if any(size % n == 0 for size in shape) else 1


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    elements = sum(
        math.prod(shape) // _ways(shape, tp, strategy, data, model)
        for shape, tp in zip(shapes, tp_specs)
    )
    params = elements * dtype_bytes
    return [params, params, 2 * params, 4 * params]
