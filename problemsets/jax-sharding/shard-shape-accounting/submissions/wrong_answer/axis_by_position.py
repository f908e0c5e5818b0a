# Wrong: divides dimension i by the size of mesh axis i (its position), not by the size of
# the axis the spec names; right only while the spec lists the axes in mesh order.
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out = []
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        if entry is None:
            pieces = 1
        elif isinstance(entry, list):
            pieces = math.prod(size[a] for a in entry)
        else:
            pieces = mesh_shape[i]
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return out
