# Wrong: divides every split dimension by the number of devices in the mesh, as if any
# sharded dimension were spread over all of them, not over the named axes only.
import math


def shard_shape(shape, mesh_shape, axis_names, spec):
    n = math.prod(mesh_shape)
    out = []
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        pieces = 1 if entry is None else n
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return out
