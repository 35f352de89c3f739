"""`jax._src.traceback_util`: equinox, flax and jaxtyping register their files as excluded from
user tracebacks (`register_exclusion`, flax also edits `_exclude_paths`) and decorate their entry
points with `api_boundary`. revax does not rewrite tracebacks for library frames, so the paths
are only recorded and `api_boundary` returns the function unchanged."""
from revax._src.extend.source_info import api_boundary as api_boundary
from revax._src.extend.source_info import excluded_paths as _exclude_paths
from revax._src.extend.source_info import register_exclusion as register_exclusion


def include_frame(frame) -> bool:
  """Whether a traceback frame is kept (flax asks; one in an excluded file is not)."""
  return not any(frame.f_code.co_filename.startswith(p) for p in _exclude_paths)
