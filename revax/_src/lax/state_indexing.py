"""How a mutable array reference is indexed: `ref[idx]`, `ref[idx] = v`, `ref.addupdate(v, idx)`.

An index is normalized (as JAX's `NDIndexer`) into one entry per dimension of the Ref: a static
slice `(start, size, stride)`, or an integer indexer. Integer indexers (Python ints, which are
bounds-checked, and integer arrays) are broadcast together to one `int_shape` and become the
dynamic operands of the state primitives; the static part is a hashable `RefIndexer` param.
The result follows NumPy's rules: the integer indexers' dimensions replace theirs in place when
they are adjacent, else they lead.

`index_array(x, indexer, idxs)` reads x[idx] and `update_array(x, indexer, idxs, v, add)` writes
(or adds) v there, both with lax operations: a slice or dynamic slice where the index allows,
else a gather / scatter. They are what the state primitives compute, eagerly and when their
effects are discharged into pure programs (interpreters/discharge.py).
"""
from __future__ import annotations

import math

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import get_aval
from revax._src.core.errors import NonConcreteBooleanIndexError
from revax._src.core.trace import Tracer
from revax._src.interpreters import discharge
from revax._src.lax import binary, comparison, conversion, shapes, slicing
from revax._src.runtime.array import Array


class Slice:
  """A slice given by a start (static, or traced: `ds(i, 2)` under jit), a static size and a
  static stride (JAX's `jax._src.indexing.Slice`)."""
  __slots__ = ("start", "size", "stride")

  def __init__(self, start, size, stride: int = 1):
    if stride < 0:
      raise ValueError("`stride` must be >= 0.")
    self.start, self.size, self.stride = start, size, stride

  def __repr__(self):
    return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"


def ds(start, size=None, stride=None):
  """A slice of `size` elements from `start`, which may be traced (JAX's `jax.ds`):
  `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, j)` is `i:i+j`, `ds(i, j, k)` is `i:i+j:k`.

  Args:
    start: the first index (an int or an integer scalar array), or None.
    size: the number of elements (a static int).
    stride: the static step (default 1).

  Returns:
    A `Slice` (or `slice(None)` for `ds(None)`), to index a Ref with.

  Example:
    >>> r = revax.new_ref(jnp.arange(6))
    >>> revax.jit(lambda i: r[revax.ds(i, 2)])(3)
    Array([3, 4], dtype=int32)
  """
  if start is None:
    return slice(None)
  if stride is None:
    stride = 1
  if not isinstance(stride, int):
    raise ValueError("Non-static stride in `dslice`")
  if size is None:
    start, size = 0, start
  return Slice(start, size, stride)


class RefIndexer:
  """The static part of a normalized index of a Ref of shape `shape`: per dimension a static
  slice ("s", start, size, stride), a slice from a traced start ("d", size, stride; the start
  is the next operand) or an integer indexer ("i",; the next operand), and the shape
  `int_shape` every integer indexer was broadcast to. Operands come in dimension order."""
  __slots__ = ("shape", "entries", "int_shape", "_hash")

  def __init__(self, shape, entries, int_shape):
    self.shape, self.entries, self.int_shape = tuple(shape), tuple(entries), tuple(int_shape)
    self._hash = hash((self.shape, self.entries, self.int_shape))

  def __eq__(self, other):
    return (type(other) is RefIndexer and self.shape == other.shape
            and self.entries == other.entries and self.int_shape == other.int_shape)

  def __hash__(self):
    return self._hash

  @property
  def num_ints(self) -> int:
    return sum(e[0] == "i" for e in self.entries)

  def int_positions(self) -> list[int]:
    return [d for d, e in enumerate(self.entries) if e[0] == "i"]

  def ints_adjacent(self) -> bool:
    pos = self.int_positions()
    return all(b - a == 1 for a, b in zip(pos, pos[1:]))

  def out_shape(self) -> tuple:
    """The shape of ref[idx]."""
    sliced = [e[-2] for e in self.entries if e[0] != "i"]
    pos = self.int_positions()
    if not pos:
      return tuple(sliced)
    if not self.ints_adjacent():
      return self.int_shape + tuple(sliced)
    first = pos[0]
    return tuple(sliced[:first]) + self.int_shape + tuple(sliced[first:])

  def __str__(self):
    parts = []
    for e, n in zip(self.entries, self.shape):
      if e[0] == "i":
        parts.append("i")
      elif e[0] == "d":
        parts.append(f"d:d+{e[1]}" + (f":{e[2]}" if e[2] != 1 else ""))
      else:
        _, start, size, stride = e
        stop = start + (size - 1) * stride + 1 if size else start
        text = f"{start or ''}:{'' if stop == n else stop}"
        parts.append(text + (f":{stride}" if stride != 1 else ""))
    return "[" + ",".join(parts) + "]"

  __repr__ = __str__


def _is_int(i) -> bool:
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _slice_entry(s: slice, n: int, pos: int):
  for part in (s.start, s.stop, s.step):
    if part is not None and not _is_int(part):
      raise IndexError(f"Ref slice entries must be static integers (use revax.ds for a traced "
                       f"start). Got {s} at position {pos}")
  start, stop, step = s.indices(n)
  if step < 1:
    raise ValueError(f"slice must have a step >= 1 (found: {step})")
  return ("s", start, len(range(start, stop, step)), step)


def _ds_entry(s: Slice, n: int):
  """(entry, start operand or None) of a `ds` slice, bounds-checked where static (as JAX)."""
  if not _is_int(s.size) or not _is_int(s.stride):
    raise TypeError(f"the size and stride of a Ref slice must be static integers: {s}")
  start = s.start
  if _is_int(start):
    start = int(start)
    if start and start >= n:
      raise ValueError(f"Out of bound slice: start={start}, dim={n}.")
    if start and s.size and start + (s.size - 1) * s.stride >= n:
      raise ValueError(f"Out of bound slice: start={start}, size={s.size}, stride={s.stride},"
                       f" dim={n}.")
    return ("s", start, int(s.size), int(s.stride)), None
  if not dtypes.is_integer(get_aval(start).dtype) or get_aval(start).shape:
    raise TypeError(f"the start of a Ref slice must be an integer scalar, got {start!r}")
  if get_aval(start).dtype != np.int32:
    start = conversion.convert_element_type(start, np.int32)
  return ("d", int(s.size), int(s.stride)), start


def normalize_index(shape, idx) -> tuple[RefIndexer | None, list]:
  """(indexer, integer indexer operands) for `ref[idx]` on a Ref of `shape`; (None, []) for
  the whole Ref (`...`, `()` or None, as in JAX)."""
  if idx is None or idx is Ellipsis:
    return None, []
  if not isinstance(idx, tuple):
    idx = (idx,)
  if not idx:
    return None, []
  num_ellipsis = sum(i is Ellipsis for i in idx)
  if num_ellipsis > 1:
    raise ValueError("Only one ellipsis is supported.")
  if num_ellipsis:
    at = next(k for k, i in enumerate(idx) if i is Ellipsis)
    idx = idx[:at] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[at + 1:]
  if len(idx) > len(shape):
    raise ValueError(f"`indices` must not be longer than `shape`: indices={idx}, "
                     f"shape={tuple(shape)}")
  idx = tuple(idx) + (slice(None),) * (len(shape) - len(idx))
  entries, ints, starts = [], [], {}
  for pos, (i, n) in enumerate(zip(idx, shape)):
    if isinstance(i, slice):
      entries.append(_slice_entry(i, n, pos))
    elif isinstance(i, Slice):
      entry, start = _ds_entry(i, n)
      if start is not None:
        starts[pos] = start
      entries.append(entry)
    elif _is_int(i):
      value = int(i)
      if value >= n:
        raise ValueError(f"Out of bound indexer: idx={value}, dim={n}.")
      entries.append(("i",))
      ints.append(np.int32(value))  # (a negative one counts from the end when it is applied)
    elif isinstance(i, (Array, Tracer, np.ndarray)):
      dt = get_aval(i).dtype
      if dtypes.is_bool(dt):
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got {get_aval(i).str_short()}")
      if not dtypes.is_integer(dt):
        raise TypeError(f"Ref indices must be integers, got an index of dtype {dt}")
      entries.append(("i",))
      ints.append(i)
    else:
      raise TypeError(f"Ref index entries must be integers, slices, integer arrays or "
                      f"Ellipsis; got {i!r} at position {pos}")
  if not ints:
    return RefIndexer(shape, entries, ()), [starts[d] for d in sorted(starts)]
  int_shapes = [np.shape(i) if not isinstance(i, (Array, Tracer)) else get_aval(i).shape
                for i in ints]
  try:
    int_shape = np.broadcast_shapes(*int_shapes)
  except ValueError:
    raise ValueError(f"Cannot broadcast shapes for indexing: {int_shapes}") from None
  operands = []
  for i, s in zip(ints, int_shapes):
    if get_aval(i).dtype != np.int32:
      i = conversion.convert_element_type(i, np.int32)
    if s != int_shape:
      i = shapes.broadcast_in_dim(i, int_shape, tuple(range(len(int_shape) - len(s),
                                                              len(int_shape))))
    operands.append(i)
  it = iter(operands)
  ordered = [starts[d] if e[0] == "d" else next(it) for d, e in enumerate(entries)
             if e[0] != "s"]
  return RefIndexer(shape, entries, int_shape), ordered


# --- reading and writing arrays at an index ------------------------------------------------------
def _wrap_negative(i, n: int):
  """i + n where i < 0 (NumPy's negative indices), for a dynamic integer indexer."""
  if not isinstance(i, (Array, Tracer)):
    return np.int32(i + n) if i < 0 else i
  return comparison.select_n(comparison.lt(i, np.int32(0)), i,
                             binary.add(i, np.int32(n)))


def _apply_slices(x, indexer: RefIndexer):
  """x with every static slice applied (those dimensions then taken whole)."""
  entries = indexer.entries
  if all(e[0] == "i" or (e[1] == 0 and e[2] == n and e[3] == 1)
         for e, n in zip(entries, indexer.shape)):
    return x
  starts, limits, strides = [], [], []
  for e, n in zip(entries, indexer.shape):
    if e[0] != "s":
      starts.append(0), limits.append(n), strides.append(1)
    else:
      _, start, size, stride = e
      starts.append(start)
      limits.append(start + (size - 1) * stride + 1 if size else start)
      strides.append(stride)
  return slicing.slice(x, starts, limits, strides)


def _sliced_shape(indexer: RefIndexer) -> tuple:
  return tuple(n if e[0] == "i" else e[-2] for e, n in zip(indexer.entries, indexer.shape))


def _split_operands(indexer: RefIndexer, idxs):
  """({dimension: traced slice start}, [integer indexers]) of an index's operands."""
  starts, ints = {}, []
  operand_dims = [d for d, e in enumerate(indexer.entries) if e[0] != "s"]
  for d, op in zip(operand_dims, idxs, strict=True):
    if indexer.entries[d][0] == "d":
      starts[d] = op
    else:
      ints.append(op)
  return starts, ints


def _apply_dynamic_slices(x, indexer: RefIndexer, starts):
  """x with its traced-start slices applied (a dynamic slice, then the stride)."""
  if not starts:
    return x
  shape = get_aval(x).shape
  begin = [np.int32(0)] * len(shape)
  window = list(shape)
  strided = False
  for d, start in starts.items():
    _, size, stride = indexer.entries[d]
    begin[d] = _wrap_negative(start, shape[d])
    window[d] = (size - 1) * stride + 1 if size else 0
    strided |= stride != 1
  x = slicing.dynamic_slice(x, begin, window)
  if strided:
    strides = [indexer.entries[d][2] if d in starts else 1 for d in range(len(shape))]
    x = slicing.slice(x, [0] * len(shape), window, strides)
  return x


def index_array(x, indexer: RefIndexer | None, idxs):
  """x[idx] for the normalized index (indexer, idxs)."""
  if indexer is None:
    return x
  starts, idxs = _split_operands(indexer, idxs)
  x = _apply_dynamic_slices(_apply_slices(x, indexer), indexer, starts)
  pos = indexer.int_positions()
  if not pos:
    return x
  shape = _sliced_shape(indexer)
  idxs = [_wrap_negative(i, shape[d]) for i, d in zip(idxs, pos)]
  if not indexer.int_shape:  # scalars only: a dynamic slice of unit size, squeezed
    starts = [np.int32(0)] * len(shape)
    for i, d in zip(idxs, pos):
      starts[d] = i
    sizes = [1 if d in pos else n for d, n in enumerate(shape)]
    y = slicing.dynamic_slice(x, starts, sizes)
    return shapes.reshape(y, [n for d, n in enumerate(shape) if d not in pos])
  return _gather(x, shape, pos, idxs, indexer)


def _gather(x, shape, pos, idxs, indexer):
  rest = [d for d in range(len(shape)) if d not in pos]
  if pos != list(range(len(pos))):
    x = shapes.transpose(x, pos + rest)
  k, nb = len(pos), len(indexer.int_shape)
  stacked = shapes.concatenate([shapes.reshape(i, indexer.int_shape + (1,)) for i in idxs], nb)
  dn = slicing.GatherDimensionNumbers(offset_dims=tuple(range(nb, nb + len(rest))),
                                      collapsed_slice_dims=tuple(range(k)),
                                      start_index_map=tuple(range(k)))
  y = slicing.gather(x, stacked, dn, (1,) * k + tuple(shape[d] for d in rest),
                     mode=slicing.GatherScatterMode.CLIP)
  if indexer.ints_adjacent() and pos[0] > 0:  # NumPy keeps adjacent int dims in place
    first = pos[0]
    perm = (list(range(nb, nb + first)) + list(range(nb)) +
            list(range(nb + first, nb + len(rest))))
    y = shapes.transpose(y, perm)
  return y


def update_array(x, indexer: RefIndexer | None, idxs, v, add: bool):
  """x with x[idx] replaced by v (`add`: increased by v)."""
  if indexer is None:
    return binary.add(x, v) if add else v
  entries = indexer.entries
  if not indexer.int_shape and all(e[0] == "i" or e[-1] == 1 for e in entries):
    # scalars and unit-stride slices: a dynamic update of the window they select
    operand_dims = [d for d, e in enumerate(entries) if e[0] != "s"]
    dynamic = dict(zip(operand_dims, idxs, strict=True))
    starts, window = [], []
    for d, (e, n) in enumerate(zip(entries, indexer.shape)):
      if e[0] == "s":
        starts.append(np.int32(e[1]))
        window.append(e[2])
      else:
        starts.append(_wrap_negative(dynamic[d], n))
        window.append(1 if e[0] == "i" else e[1])
    v = shapes.reshape(v, window)
    if add:
      v = binary.add(slicing.dynamic_slice(x, starts, window), v)
    return slicing.dynamic_update_slice(x, v, starts)
  # anything else: the positions idx selects in a flat iota, and a scatter there
  aval = get_aval(x)
  size = aval.size
  flat_pos = shapes.reshape(shapes.iota(np.int32, size), aval.shape)
  where = index_array(flat_pos, indexer, idxs)
  n = math.prod(get_aval(where).shape)
  dn = slicing.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
  scatter = slicing.scatter_add if add else slicing.scatter
  out = scatter(shapes.reshape(x, (size,)), shapes.reshape(where, (n, 1)),
                shapes.reshape(v, (n,)), dn, mode=slicing.GatherScatterMode.FILL_OR_DROP,
                unique_indices=discharge.discharging_linear_program())
  return shapes.reshape(out, aval.shape)
