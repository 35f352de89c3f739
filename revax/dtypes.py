"""revax.dtypes: dtype utilities, as jax.dtypes."""
from revax._src.core.dtypes import bfloat16 as bfloat16
from revax._src.core.dtypes import canonicalize_dtype as canonicalize_dtype
from revax._src.core.dtypes import finfo as finfo
from revax._src.core.dtypes import float0 as float0
from revax._src.core.dtypes import iinfo as iinfo
from revax._src.core.dtypes import issubdtype as issubdtype
