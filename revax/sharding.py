"""revax.sharding: meshes and partition specs (JAX's `jax.sharding`)."""
from revax._src.sharding import Mesh as Mesh
from revax._src.sharding import NamedSharding as NamedSharding
from revax._src.sharding import PartitionSpec as PartitionSpec
from revax._src.sharding import Sharding as Sharding
from revax._src.sharding import SingleDeviceSharding as SingleDeviceSharding
