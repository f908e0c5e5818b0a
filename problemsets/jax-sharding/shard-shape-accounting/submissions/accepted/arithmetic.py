# Accepted: pure arithmetic, no JAX: each dimension is divided by the product of the sizes of
# the mesh axes named in its spec entry; returns a list.
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out = []
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        names = [] if entry is None else [entry] if isinstance(entry, str) else entry
        pieces = math.prod(size[a] for a in names)
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return out
