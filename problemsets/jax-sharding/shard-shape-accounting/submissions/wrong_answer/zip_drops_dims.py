# Wrong: zips the shape with the spec, so dimensions without a spec entry are dropped; P()
# gives an empty shard shape instead of the whole array's shape.
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out = []
    for i, (dim, entry) in enumerate(zip(shape, spec)):
        names = [] if entry is None else [entry] if isinstance(entry, str) else entry
        pieces = math.prod(size[a] for a in names)
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return out
