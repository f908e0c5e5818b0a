# Wrong: splits the batch by jax.device_count() (8) instead of process_count, so each
# process loads one device's share.
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    usable = x.shape[0] // data * data
    n = jax.device_count()  # BUG: should be process_count
    per = usable // n
    local_rows = x[process_index * per:(process_index + 1) * per]
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    array = jax.device_put(x[:usable], NamedSharding(mesh, P("data", None)))
    return {"local_rows": local_rows, "array": array}
