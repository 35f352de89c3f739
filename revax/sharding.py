"""revax.sharding: meshes and partition specs (JAX's `jax.sharding`)."""
from revax._src.sharding import Mesh as Mesh
from revax._src.sharding import NamedSharding as NamedSharding
from revax._src.sharding import PartitionSpec as PartitionSpec
from revax._src.sharding import Sharding as Sharding
from revax._src.sharding import SingleDeviceSharding as SingleDeviceSharding
from revax._src.sharding import AbstractMesh as AbstractMesh
from revax._src.sharding import AxisType as AxisType
from revax._src.core.vma import ManualAxisType as ManualAxisType
from revax._src.sharding import set_mesh as set_mesh
from revax._src.sharding import get_mesh as get_mesh
from revax._src.sharding import get_abstract_mesh as get_abstract_mesh
from revax._src.sharding import use_abstract_mesh as use_abstract_mesh
from revax._src.sharding import make_single_device_sharding as make_single_device_sharding
from revax._src.sharded_api import reshard as reshard
from revax._src.sharded_api import auto_axes as auto_axes
from revax._src.sharded_api import explicit_axes as explicit_axes
from revax._src.sharding import AbstractDevice as AbstractDevice
