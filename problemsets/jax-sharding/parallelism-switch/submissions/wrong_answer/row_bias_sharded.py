# Wrong: assumes every parameter of the model is sharded over "model", the row-parallel
# bias too (rounding down when it does not divide); that bias is annotated (None,) and
# every device keeps all of it.

def params_per_device(widths, param_dtype, mesh_shapes):
    itemsize = 2 if param_dtype == "bfloat16" else 4
    rows = []
    for _data, model in mesh_shapes:
        elements = 0
        for i in range(len(widths) - 1):
            d_in, d_out = widths[i], widths[i + 1]
            if i % 2 == 0:
                elements += d_in * (d_out // model) + d_out // model
            else:
                elements += (d_in // model) * d_out + d_out // model  # BUG: bias is replicated
        rows.append([elements, elements * itemsize])
    return rows
