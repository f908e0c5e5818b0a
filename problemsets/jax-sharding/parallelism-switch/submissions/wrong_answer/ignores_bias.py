# Wrong: counts only the kernels; the biases are parameters too.

def params_per_device(widths, param_dtype, mesh_shapes):
    itemsize = 2 if param_dtype == "bfloat16" else 4
    rows = []
    for _data, model in mesh_shapes:
        elements = 0
        for i in range(len(widths) - 1):
            elements += widths[i] * widths[i + 1] // model  # BUG: no bias
        rows.append([elements, elements * itemsize])
    return rows
