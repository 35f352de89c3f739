"""revax's primitive families; this package re-exports every family's public wrappers."""
from revax._src.lax.batch_util import *  # noqa: F401,F403
from revax._src.lax.binary import *  # noqa: F401,F403
from revax._src.lax.bits import *  # noqa: F401,F403
from revax._src.lax.comparison import *  # noqa: F401,F403
from revax._src.lax.control_flow import *  # noqa: F401,F403
from revax._src.lax.conversion import *  # noqa: F401,F403
from revax._src.lax.convolution import *  # noqa: F401,F403
from revax._src.lax.creation import *  # noqa: F401,F403
from revax._src.lax.dot import *  # noqa: F401,F403
from revax._src.lax.fft import *  # noqa: F401,F403
from revax._src.lax.prng import *  # noqa: F401,F403
from revax._src.lax.parallel import *  # noqa: F401,F403
from revax._src.lax.parallel_ragged import *  # noqa: F401,F403
from revax._src.lax.reductions import *  # noqa: F401,F403
from revax._src.lax.shapes import *  # noqa: F401,F403
from revax._src.lax.slicing import *  # noqa: F401,F403
from revax._src.lax.sorting import *  # noqa: F401,F403
from revax._src.lax.stop_gradient import *  # noqa: F401,F403
from revax._src.lax.unary import *  # noqa: F401,F403
from revax._src.lax.windowed import *  # noqa: F401,F403
from revax._src.interpreters.barrier import optimization_barrier as optimization_barrier  # noqa: F401
from revax._src.lax.special import *  # noqa: F401,F403
from revax._src.lax import sharding_rules as _sharding_rules  # noqa: F401 (registers rules)
from revax._src.lax import state as _state  # noqa: F401 (mutable array refs; revax.ref)
