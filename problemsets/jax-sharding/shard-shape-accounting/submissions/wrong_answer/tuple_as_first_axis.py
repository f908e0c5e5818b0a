# Wrong: reads a multi-axis entry such as ("data", "model") as its first axis only, so the
# dimension is cut into 2 pieces instead of 2 * 4 = 8.
def shard_shape(shape, mesh_shape, axis_names, spec):
    size = dict(zip(axis_names, mesh_shape))
    out = []
    for i, dim in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        if isinstance(entry, list):
            entry = entry[0]
        pieces = 1 if entry is None else size[entry]
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
        out.append(dim // pieces)
    return out
