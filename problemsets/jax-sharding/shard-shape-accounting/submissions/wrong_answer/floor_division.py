# Wrong: floor-divides and never checks divisibility, so 6 rows over 4 devices become a
# "shard" of 1 row instead of an error.
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out = []
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        names = [] if entry is None else [entry] if isinstance(entry, str) else entry
        out.append(dim // math.prod(size[a] for a in names))
    return out
