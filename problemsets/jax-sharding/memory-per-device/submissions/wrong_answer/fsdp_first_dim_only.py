# Wrong: under FSDP it only tries to split dimension 0; a parameter such as [3, 64] whose
# first dimension does not divide is left replicated although its second one divides.
import math


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    n = data * model
    elements = 0
    for shape, tp in zip(shapes, tp_specs):
        if strategy == "tp":
            ways = model ** sum(1 for e in tp if e == "model")
        elif strategy == "fsdp":
            ways = n if shape[0] % n == 0 else 1  # BUG: only the first dimension
        else:
            ways = 1
        elements += math.prod(shape) // ways
    params = elements * dtype_bytes
    return [params, params, 2 * params, 4 * params]
