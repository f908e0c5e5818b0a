# Wrong: under FSDP it splits a parameter whenever its element count divides by the
# device count; [20, 6] has 120 elements but no dimension that splits 8 ways.
import math


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    n = data * model
    elements = 0
    for shape, tp in zip(shapes, tp_specs):
        size = math.prod(shape)
        if strategy == "tp":
            ways = model ** sum(1 for e in tp if e == "model")
        elif strategy == "fsdp":
            ways = n if size % n == 0 else 1  # BUG: a flat split, not a dimension
        else:
            ways = 1
        elements += size // ways
    params = elements * dtype_bytes
    return [params, params, 2 * params, 4 * params]
