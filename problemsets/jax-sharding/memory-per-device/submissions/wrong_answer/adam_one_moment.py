# Wrong: counts Adam's state as one copy of the parameters, forgetting that Adam keeps two
# moments (mu and nu).
import math


def memory_per_device(shapes, tp_specs, dtype_bytes, mesh_shape, strategy):
    data, model = mesh_shape
    n = data * model
    elements = 0
    for shape, tp in zip(shapes, tp_specs):
        if strategy == "tp":
            ways = model ** sum(1 for e in tp if e == "model")
        elif strategy == "fsdp":
            ways = n if any(s % n == 0 for s in shape) else 1
        else:
            ways = 1
        elements += math.prod(shape) // ways
    params = elements * dtype_bytes
    adam = params  # BUG: only one moment
    return [params, params, adam, params + params + adam]
