# Wrong: reads each mesh shape as [model, data] instead of [data, model].

def params_per_device(widths, param_dtype, mesh_shapes):
    itemsize = 2 if param_dtype == "bfloat16" else 4
    rows = []
    for model, _data in mesh_shapes:  # BUG: the order is [data, model]
        elements = 0
        for i in range(len(widths) - 1):
            d_in, d_out = widths[i], widths[i + 1]
            if i % 2 == 0:
                elements += d_in * (d_out // model) + d_out // model
            else:
                elements += (d_in // model) * d_out + d_out
        rows.append([elements, elements * itemsize])
    return rows
