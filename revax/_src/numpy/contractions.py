"""Tensor contractions on lax.dot_general: matmul, dot, vdot, inner, outer, tensordot.

Operands are promoted to their common dtype first. Batch dimensions of `matmul` broadcast; an
operand without batch dimensions is not broadcast at all (its matrix dims become free dims of
the dot, and the result is transposed into place if needed).
"""
from __future__ import annotations

import operator

from revax._src import lax
from revax._src.numpy import util
from revax._src.numpy.util import aval_of


def _shape(x):
  return aval_of(x).shape


def _dot(a, b, contract, batch, precision, preferred_element_type):
  return lax.dot_general(a, b, (contract, batch), precision=precision,
                         preferred_element_type=preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
  """Matrix product with NumPy's rules: 1-d operands are vectors, leading dims broadcast.

  Example:
    >>> matmul(ones((4, 2, 3)), ones((3, 5))).shape   # (4, 2, 5)
  """
  a, b = util.promote_args("matmul", a, b)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    raise ValueError(f"matmul: inputs must be at least 1-dimensional, got shapes {sa} and {sb}")
  vec_a, vec_b = len(sa) == 1, len(sb) == 1
  if vec_a:
    a, sa = lax.expand_dims(a, (0,)), (1,) + sa
  if vec_b:
    b, sb = lax.expand_dims(b, (1,)), sb + (1,)
  if sa[-1] != sb[-2]:
    raise ValueError(f"matmul: contracting dimensions differ: shapes {_shape(a)} and "
                     f"{_shape(b)} (size {sa[-1]} vs {sb[-2]})")
  ba, bb = sa[:-2], sb[:-2]
  na, nb = len(sa), len(sb)
  if not bb:  # (..., m, k) @ (k, n): the output is a's free dims then n
    out = _dot(a, b, ((na - 1,), (0,)), ((), ()), precision, preferred_element_type)
  elif not ba:  # (m, k) @ (..., k, n): dot gives (m, ..., n); move m into place
    out = _dot(a, b, ((1,), (nb - 2,)), ((), ()), precision, preferred_element_type)
    perm = tuple(range(1, nb - 1)) + (0, nb - 1)
    out = lax.transpose(out, perm)
  else:
    batch = util.broadcast_shapes(ba, bb)
    a = util.broadcast_to(a, batch + sa[-2:])
    b = util.broadcast_to(b, batch + sb[-2:])
    k = len(batch)
    out = _dot(a, b, ((k + 1,), (k,)), (tuple(range(k)), tuple(range(k))), precision,
               preferred_element_type)
  nd = len(_shape(out))
  squeeze = ([nd - 2] if vec_a else []) + ([nd - 1] if vec_b else [])
  return lax.squeeze(out, tuple(squeeze)) if squeeze else out


def dot(a, b, *, precision=None, preferred_element_type=None):
  """np.dot: products of scalars, inner products of vectors, and a's last axis contracted with
  b's second-to-last (its only one if b is a vector).

  Example:
    >>> dot(ones((2, 3)), ones(3)).shape   # (2,)
  """
  a, b = util.promote_args("dot", a, b)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    return lax.mul(a, b)
  cb = 0 if len(sb) == 1 else len(sb) - 2
  if sa[-1] != sb[cb]:
    raise ValueError(f"dot: shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != "
                     f"{sb[cb]} (dim {cb})")
  return _dot(a, b, ((len(sa) - 1,), (cb,)), ((), ()), precision, preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Sum of products over the last axes of `a` and `b`."""
  a, b = util.promote_args("inner", a, b)
  sa, sb = _shape(a), _shape(b)
  if not sa or not sb:
    return lax.mul(a, b)
  if sa[-1] != sb[-1]:
    raise ValueError(f"inner: last dimensions differ: shapes {sa} and {sb}")
  return _dot(a, b, ((len(sa) - 1,), (len(sb) - 1,)), ((), ()), precision,
              preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Inner product of the flattened arrays, conjugating `a` first."""
  from revax._src.numpy.shape_ops import ravel
  from revax._src.numpy.ufuncs import conjugate
  a, b = util.promote_args("vdot", a, b)
  a, b = ravel(conjugate(a)), ravel(b)
  if _shape(a) != _shape(b):
    raise ValueError(f"vdot: operands must have the same size, got {_shape(a)} and {_shape(b)}")
  return _dot(a, b, ((0,), (0,)), ((), ()), precision, preferred_element_type)


def outer(a, b):
  """Outer product of the flattened arrays: out[i, j] = a[i] * b[j]."""
  from revax._src.numpy.shape_ops import ravel
  from revax._src.numpy.ufuncs import multiply
  a, b = util.promote_args("outer", a, b)
  return multiply(lax.expand_dims(ravel(a), (1,)), lax.expand_dims(ravel(b), (0,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
  """Contract `axes` of `a` with `axes` of `b`: an int N (a's last N with b's first N) or a
  pair of axis sequences.

  Example:
    >>> tensordot(ones((2, 3, 4)), ones((3, 4, 5)), 2).shape   # (2, 5)
  """
  a, b = util.promote_args("tensordot", a, b)
  na, nb = len(_shape(a)), len(_shape(b))
  if isinstance(axes, (list, tuple)) and len(axes) == 2:
    ax_a, ax_b = axes
    ax_a = util.canonicalize_axes(ax_a if isinstance(ax_a, (list, tuple)) else (ax_a,), na)
    ax_b = util.canonicalize_axes(ax_b if isinstance(ax_b, (list, tuple)) else (ax_b,), nb)
    if len(ax_a) != len(ax_b):
      raise TypeError(f"tensordot requires axes lists to have equal length, got {axes}")
  else:
    try:
      n = operator.index(axes)
    except TypeError:
      raise TypeError(f"tensordot axes argument must be an int or a pair of sequences, got "
                      f"{axes!r}") from None
    if n < 0 or n > min(na, nb):
      raise TypeError(f"tensordot requires 0 <= axes <= min(a.ndim, b.ndim) = "
                      f"{min(na, nb)}, got {n}")
    ax_a, ax_b = tuple(range(na - n, na)), tuple(range(n))
  for i, j in zip(ax_a, ax_b, strict=True):
    if _shape(a)[i] != _shape(b)[j]:
      raise TypeError(f"tensordot: shape mismatch on contracted axes: a axis {i} has size "
                      f"{_shape(a)[i]}, b axis {j} has size {_shape(b)[j]}")
  return _dot(a, b, (ax_a, ax_b), ((), ()), precision, preferred_element_type)
