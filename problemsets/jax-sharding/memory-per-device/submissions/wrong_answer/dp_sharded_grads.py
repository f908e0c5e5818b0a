# Wrong: under data parallelism it assumes each device keeps only its share of the
# gradient (grads / n), but DP all-reduces them: every device holds the full gradient.
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
    grads = params // n if strategy == "dp" else params  # BUG
    return [params, grads, 2 * params, params + grads + 2 * params]
