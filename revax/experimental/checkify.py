"""Functionalized runtime checks (JAX's `jax.experimental.checkify`)."""
from revax._src.experimental.checkify import Error as Error
from revax._src.experimental.checkify import ErrorCategory as ErrorCategory
from revax._src.experimental.checkify import JaxRuntimeError as JaxRuntimeError
from revax._src.experimental.checkify import all_checks as all_checks
from revax._src.experimental.checkify import automatic_checks as automatic_checks
from revax._src.experimental.checkify import check as check
from revax._src.experimental.checkify import check_error as check_error
from revax._src.experimental.checkify import checkify as checkify
from revax._src.experimental.checkify import debug_check as debug_check
from revax._src.experimental.checkify import div_checks as div_checks
from revax._src.experimental.checkify import float_checks as float_checks
from revax._src.experimental.checkify import index_checks as index_checks
from revax._src.experimental.checkify import init_error as init_error
from revax._src.experimental.checkify import nan_checks as nan_checks
from revax._src.experimental.checkify import user_checks as user_checks
