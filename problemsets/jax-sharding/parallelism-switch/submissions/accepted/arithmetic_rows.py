# Accepted: pure arithmetic from the annotation rules; returns a list of lists.

def params_per_device(widths, param_dtype, mesh_shapes):
    itemsize = 2 if param_dtype == "bfloat16" else 4
    rows = []
    for _data, model in mesh_shapes:
        elements = 0
        for i in range(len(widths) - 1):
            d_in, d_out = widths[i], widths[i + 1]
            if i % 2 == 0:   # column-parallel: kernel and bias split over "model"
                elements += d_in * (d_out // model) + d_out // model
            else:            # row-parallel: kernel split on its input, bias whole
                elements += (d_in // model) * d_out + d_out
        rows.append([elements, elements * itemsize])
    return rows
