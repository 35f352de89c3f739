"""revax's implementation. optree is imported first, through `optree_exit` (see there why)."""
from revax._src import optree_exit as _optree_exit  # noqa: F401
