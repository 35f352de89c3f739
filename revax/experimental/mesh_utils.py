"""Device meshes for `revax.sharding.Mesh` (JAX's `jax.experimental.mesh_utils`)."""
from revax._src.experimental.mesh_utils import create_device_mesh as create_device_mesh
from revax._src.experimental.mesh_utils import create_hybrid_device_mesh as create_hybrid_device_mesh
from revax._src.experimental.mesh_utils import device_kind_handler_dict as device_kind_handler_dict
