"""revax.scipy.spatial.transform: 3-D rotations, as jax.scipy.spatial.transform."""
from revax._src.scipy.spatial_transform import Rotation as Rotation
from revax._src.scipy.spatial_transform import Slerp as Slerp
