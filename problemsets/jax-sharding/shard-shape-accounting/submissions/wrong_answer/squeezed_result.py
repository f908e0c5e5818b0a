# Wrong answer: right arithmetic, then the shape is "tidied" with np.squeeze, which drops
# every dimension of size 1: a 1-D array's shard shape (3,) comes back as the scalar 3, and
# a shard of shape (4, 1) as (4,).
import math

import numpy as np


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
    return np.squeeze(np.array(out, dtype=np.int64))
