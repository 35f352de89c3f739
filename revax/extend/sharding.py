"""revax.extend.sharding: the sharding XLA chose where no PartitionSpec describes it
(jax.extend.sharding)."""
from revax._src.sharded_place import GSPMDSharding as GSPMDSharding
