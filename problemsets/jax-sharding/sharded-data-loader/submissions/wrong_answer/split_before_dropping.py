# Wrong: splits all N rows by the process count (N // count each) before dropping the
# remainder, so when N does not divide by the data axis the blocks are misaligned.
import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def load_process_batch(batch, process_index, process_count, mesh_shape):
    data, model = mesh_shape
    x = np.asarray(batch)
    per = x.shape[0] // process_count  # BUG: should split the B usable rows by data shard
    local_rows = x[process_index * per:(process_index + 1) * per]
    usable = x.shape[0] // data * data
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    array = jax.device_put(x[:usable], NamedSharding(mesh, P("data", None)))
    return {"local_rows": local_rows, "array": array}
