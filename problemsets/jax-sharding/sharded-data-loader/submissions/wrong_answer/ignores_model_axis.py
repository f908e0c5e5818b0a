# Wrong: always gives each process its own 1/process_count of the usable batch, ignoring
# that processes whose devices share a data position (model axis across processes) must
# load the same rows.
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    usable = x.shape[0] // data * data
    per = usable // process_count  # BUG: wrong when process_count > data
    local_rows = x[process_index * per:(process_index + 1) * per]
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    array = jax.make_array_from_callback(
        (usable, x.shape[1]), NamedSharding(mesh, P("data", None)), lambda idx: x[idx])
    return {"local_rows": local_rows, "array": array}
