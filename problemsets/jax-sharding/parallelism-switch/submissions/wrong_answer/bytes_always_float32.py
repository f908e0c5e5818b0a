# Wrong: converts elements to bytes at 4 bytes each whatever param_dtype is; a bfloat16
# parameter takes 2.

def params_per_device(widths, param_dtype, mesh_shapes):
    rows = []
    for _data, model in mesh_shapes:
        elements = 0
        for i in range(len(widths) - 1):
            d_in, d_out = widths[i], widths[i + 1]
            if i % 2 == 0:
                elements += d_in * (d_out // model) + d_out // model
            else:
                elements += (d_in // model) * d_out + d_out
        rows.append([elements, 4 * elements])  # BUG: ignores param_dtype
    return rows
