# Accepted: computes the block with integer arithmetic (data positions of this process's
# devices) and builds the array with make_array_from_callback reading rows by index.
import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    usable = x.shape[0] // data * data
    rows_per_shard = usable // data

    per_process = 8 // process_count
    first_dev = process_index * per_process
    last_dev = first_dev + per_process - 1
    first_pos, last_pos = first_dev // model, last_dev // model  # row of the device grid
    local_rows = x[first_pos * rows_per_shard:(last_pos + 1) * rows_per_shard]

    mesh = Mesh(np.array(jax.devices()).reshape(data, model), ("data", "model"),
                axis_types=(AxisType.Auto, AxisType.Auto))
    array = jax.make_array_from_callback(
        (usable, x.shape[1]), NamedSharding(mesh, P("data")), lambda idx: x[:usable][idx])
    return {"local_rows": local_rows, "array": array}
