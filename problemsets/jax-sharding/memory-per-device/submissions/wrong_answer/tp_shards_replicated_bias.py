# Wrong: under tensor parallelism it splits every parameter over the "model" axis,
# including those annotated [None] (the row-parallel bias), which stay replicated.
import math


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    n = data * model
    elements = 0
    for shape, tp in zip(shapes, tp_specs):
        if strategy == "tp":
            ways = model  # BUG: ignores the annotation
        elif strategy == "fsdp":
            ways = n if any(s % n == 0 for s in shape) else 1
        else:
            ways = 1
        elements += math.prod(shape) // ways
    params = elements * dtype_bytes
    return [params, params, 2 * params, 4 * params]
