"""revax.dtypes: dtype utilities, as jax.dtypes."""
from revax._src.core.dtypes import bfloat16_scalar_type as bfloat16
from revax._src.core.dtypes import finfo as finfo
from revax._src.core.dtypes import float0 as float0
from revax._src.core.dtypes import iinfo as iinfo
from revax._src.core.extended_dtypes import TypePromotionError as TypePromotionError
from revax._src.core.extended_dtypes import canonicalize_dtype as canonicalize_dtype
from revax._src.core.extended_dtypes import extended as extended
from revax._src.core.extended_dtypes import issubdtype as issubdtype
from revax._src.core.extended_dtypes import itemsize_bits as itemsize_bits
from revax._src.core.extended_dtypes import prng_key as prng_key
from revax._src.core.extended_dtypes import scalar_type_of as scalar_type_of
from revax._src.numpy.dtype_api import result_type as result_type
