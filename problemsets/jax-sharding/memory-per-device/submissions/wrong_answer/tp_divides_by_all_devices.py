# Wrong: under tensor parallelism it divides every parameter by the total number of
# devices, as if the "data" axis split the weights too (and as if nothing were replicated).
import math


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    n = data * model
    elements = 0
    for shape, tp in zip(shapes, tp_specs):
        if strategy == "tp":
            ways = n  # BUG: should be model per annotated dim, 1 for unannotated params
        elif strategy == "fsdp":
            ways = n if any(s % n == 0 for s in shape) else 1
        else:
            ways = 1
        elements += math.prod(shape) // ways
    params = elements * dtype_bytes
    return [params, params, 2 * params, 4 * params]
