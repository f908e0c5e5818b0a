# Wrong: scans every dimension and keeps overwriting the error, so it reports the LAST
# dimension that does not divide instead of the first one (the one JAX names).
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out, error = [], None
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        names = [] if entry is None else [entry] if isinstance(entry, str) else entry
        pieces = math.prod(size[a] for a in names)
        if dim % pieces:
            error = {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return error if error is not None else out
