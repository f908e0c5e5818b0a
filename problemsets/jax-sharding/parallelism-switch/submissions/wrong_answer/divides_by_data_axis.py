# Wrong: splits the annotated dimensions over every device of the mesh (data * model), as
# if the "data" axis sharded the weights too; it only replicates them.

def params_per_device(widths, param_dtype, mesh_shapes):
    itemsize = 2 if param_dtype == "bfloat16" else 4
    rows = []
    for data, model in mesh_shapes:
        ways = data * model  # BUG: should be model
        elements = 0
        for i in range(len(widths) - 1):
            d_in, d_out = widths[i], widths[i + 1]
            if i % 2 == 0:
                elements += d_in * (d_out // ways) + d_out // ways
            else:
                elements += (d_in // ways) * d_out + d_out
        rows.append([elements, elements * itemsize])
    return rows
