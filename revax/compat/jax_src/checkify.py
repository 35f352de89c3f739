"""`jax._src.checkify`: flax's `nnx.checkify` uses `checkify`, `Error`, `user_checks` and the
error classes from here; they are revax.experimental.checkify's."""
from revax.experimental.checkify import *  # noqa: F401,F403
from revax.experimental.checkify import Error as Error
from revax.experimental.checkify import checkify as checkify
from revax.experimental.checkify import user_checks as user_checks
from revax._src.experimental.checkify import JaxException as JaxException

import typing as _typing

Out = _typing.TypeVar("Out")  # the checkified function's output type (a type variable in jax)
