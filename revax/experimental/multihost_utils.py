"""Multi-host helpers (JAX's `jax.experimental.multihost_utils`) for revax's single process."""
from revax._src.experimental.multihost_utils import ProcessFailureError as ProcessFailureError
from revax._src.experimental.multihost_utils import assert_equal as assert_equal
from revax._src.experimental.multihost_utils import broadcast_one_to_all as broadcast_one_to_all
from revax._src.experimental.multihost_utils import (
    global_array_to_host_local_array as global_array_to_host_local_array)
from revax._src.experimental.multihost_utils import (
    host_local_array_to_global_array as host_local_array_to_global_array)
from revax._src.experimental.multihost_utils import live_devices as live_devices
from revax._src.experimental.multihost_utils import process_allgather as process_allgather
from revax._src.experimental.multihost_utils import (
    reached_preemption_sync_point as reached_preemption_sync_point)
from revax._src.experimental.multihost_utils import sync_global_devices as sync_global_devices
