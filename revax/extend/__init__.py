"""revax.extend: the extension API for libraries that define primitives (jax.extend)."""
from revax.extend import backend as backend
from revax.extend import core as core
from revax.extend import linear_util as linear_util
from revax.extend import lowering as lowering
from revax.extend import random as random
from revax.extend import sharding as sharding
from revax.extend import source_info_util as source_info_util
