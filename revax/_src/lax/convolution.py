"""conv_general_dilated: n-dimensional convolution with strides, padding, dilations and groups.

The primitive follows XLA's Conv: the lhs (input) is dilated by `lhs_dilation` (zeros between
elements), padded by `(lo, hi)` pairs (negative pads crop), and a window of the rhs (kernel),
itself dilated by `rhs_dilation`, slides over it with `window_strides`. `dimension_numbers` say
where the batch, feature and spatial dimensions sit in each operand and in the output (a
`ConvDimensionNumbers` of permutations in canonical order: (batch, feature, spatial...) for lhs
and output, (out feature, in feature, spatial...) for rhs). `feature_group_count` splits the lhs
features (and rhs output features) into groups convolved separately; `batch_group_count` does
the same with the lhs batch.

A convolution is bilinear: its JVP applies it to each tangent, and both transposes are again
convolutions (the lhs cotangent convolves the output cotangent with the reversed kernel, the rhs
cotangent convolves the lhs with the output cotangent) for any strides, dilations, padding pairs
and group counts. The batching rule folds the mapped axis into the batch or feature dimension,
adjusting the group counts, so a vmapped convolution is one convolution.

`conv`, `conv_with_general_padding` and `conv_transpose` are wrappers, as in jax.lax.
"""
from __future__ import annotations

import functools
import operator
from typing import NamedTuple, Sequence

import numpy as np

from revax._src.core import dtypes, sharding_types
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.shape_poly import canonical_dim, max_dim
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax.binary import add, sub
from revax._src.lax.binary import complex as _complex
from revax._src.lax.conversion import convert_element_type
from revax._src.lax.creation import full
from revax._src.lax import dot_algorithms
from revax._src.lax.dot import _canonicalize_precision
from revax._src.lax.sharding_constraint import placed
from revax._src.lax.shapes import reshape, rev, transpose
from revax._src.lax.unary import imag, real

__all__ = [
  "ConvDimensionNumbers",
  "conv_dimension_numbers",
  "conv_general_permutations",
  "conv_general_dilated",
  "conv",
  "conv_with_general_padding",
  "conv_transpose",
  "conv_shape_tuple",
  "conv_general_shape_tuple",
  "conv_transpose_shape_tuple",
  "conv_general_dilated_p",
]


class ConvDimensionNumbers(NamedTuple):
  """Where the batch, feature and spatial dimensions of a convolution sit.

  Attributes:
    lhs_spec: `(batch dimension, feature dimension, spatial dimensions...)` of the lhs.
    rhs_spec: `(out feature dimension, in feature dimension, spatial dimensions...)` of the rhs.
    out_spec: `(batch dimension, feature dimension, spatial dimensions...)` of the output.
  """
  lhs_spec: Sequence[int]
  rhs_spec: Sequence[int]
  out_spec: Sequence[int]


# --- dimension numbers and padding ---------------------------------------------------------------
def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """Convert convolution `dimension_numbers` to a `ConvDimensionNumbers`.

  Args:
    lhs_shape, rhs_shape: the operands' shapes.
    dimension_numbers: None (the layout `('NCHW', 'OIHW', 'NCHW')` of any rank), a
      `ConvDimensionNumbers`, a triple of layout strings such as `('NHWC', 'HWIO', 'NHWC')`, or a
      triple of dimension-index sequences in canonical order (as `ConvDimensionNumbers` holds).

  Returns:
    A `ConvDimensionNumbers` of tuples of ints.

  Example:
    >>> lax.conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ('NHWC', 'HWIO', 'NHWC'))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
  """
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(_spec_tuple(s) for s in dimension_numbers))
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
                    f"{len(rhs_shape)} (shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}).")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if not isinstance(dimension_numbers, (list, tuple)):
    raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")
  if len(dimension_numbers) != 3:
    raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if all(isinstance(s, str) for s in dimension_numbers):
    for i, spec in enumerate(dimension_numbers):
      if len(spec) != len(lhs_shape):
        raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of "
                        f"lhs and rhs, got {len(spec)} for lhs and rhs shapes {tuple(lhs_shape)} "
                        f"and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
  if any(isinstance(s, str) for s in dimension_numbers):
    raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                    f"{tuple(map(type, dimension_numbers))}.")
  return ConvDimensionNumbers(*(_spec_tuple(s) for s in dimension_numbers))


def _spec_tuple(spec) -> tuple[int, ...]:
  try:
    return tuple(operator.index(d) for d in spec)
  except TypeError:
    raise TypeError(f"convolution dimension_numbers elements must be layout strings or sequences "
                    f"of integers, got {spec!r}") from None


def conv_general_permutations(dimension_numbers):
  """The (lhs, rhs, out) permutations into canonical order described by layout strings.

  Spatial dimensions are matched by their characters; their order is the order in which they
  appear in the rhs string (so `window_strides[0]` belongs to the first spatial character of
  the rhs).

  Example:
    >>> lax.conv_general_permutations(('NHWC', 'HWIO', 'NHWC'))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  """
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(charpairs):
    if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters '{a}' and "
                      f"'{b}' exactly once, got {dimension_numbers[i]}.")
    if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, got "
                      f"{dimension_numbers[i]}.")
  if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}):
    raise TypeError(f"convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {tuple(dimension_numbers)}.")

  def perm(spec, pair):
    spatial = [i for i, c in enumerate(spec) if c not in pair]
    spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

  return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs, strict=True))


def _check_dimension_numbers(dnums: ConvDimensionNumbers, lhs_ndim: int, rhs_ndim: int) -> None:
  for name, spec, ndim in zip(("lhs_spec", "rhs_spec", "out_spec"), dnums,
                              (lhs_ndim, rhs_ndim, lhs_ndim), strict=True):
    if sorted(spec) != list(range(ndim)):
      raise TypeError(f"convolution dimension_numbers.{name} must be a permutation of the "
                      f"dimensions 0..{ndim - 1} of a rank-{ndim} operand, got {tuple(spec)}")


def _dilate_dim(d: int, dilation: int) -> int:
  return 0 if d == 0 else 1 + dilation * (d - 1)


def _conv_padding(in_shape, window_shape, window_strides, padding: str):
  """(lo, hi) pads per spatial dimension for 'SAME', 'SAME_LOWER' or 'VALID' (as
  jax.lax.padtype_to_pads): SAME pads so the output has ceil(in / stride) elements, with an odd
  extra element at the end ('SAME') or at the start ('SAME_LOWER')."""
  mode = padding.upper()
  if mode == "VALID":
    return tuple((0, 0) for _ in in_shape)
  if mode not in ("SAME", "SAME_LOWER"):
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', "
                       f"got {padding}.")
  pads = []
  for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
    out = -(-int(n) // int(s))
    total = max((out - 1) * int(s) + int(k) - int(n), 0)
    small, big = total // 2, total - total // 2
    pads.append((small, big) if mode == "SAME" else (big, small))
  return tuple(pads)


def _int_tuple(xs, what: str) -> tuple[int, ...]:
  try:
    return tuple(operator.index(x) for x in xs)
  except TypeError:
    raise TypeError(f"conv_general_dilated {what} must be a sequence of integers, got "
                    f"{xs!r}") from None


# --- conv_general_dilated ------------------------------------------------------------------------
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None, out_sharding=None):
  """General n-dimensional convolution with dilation and grouping (XLA's Conv).

  Args:
    lhs: the input, of rank n + 2.
    rhs: the kernel, of rank n + 2.
    window_strides: n strides of the sliding window.
    padding: 'SAME', 'SAME_LOWER', 'VALID', or n `(low, high)` pairs of integers (negative
      values crop) applied to the dilated lhs.
    lhs_dilation: None or n factors dilating the lhs (a transposed convolution).
    rhs_dilation: None or n factors dilating the kernel (an atrous convolution).
    dimension_numbers: None (`('NCHW', 'OIHW', 'NCHW')`-style), a `ConvDimensionNumbers`, a
      triple of layout strings such as `('NHWC', 'HWIO', 'NHWC')`, or a triple of index tuples.
      Strides, pads and dilations follow the order of the rhs string's spatial characters.
    feature_group_count: groups of lhs features convolved separately (depthwise: the number
      of lhs features).
    batch_group_count: groups of the lhs batch convolved separately.
    precision: None, a `Precision`, or a pair of them.
    preferred_element_type: the accumulation/result dtype.
    out_sharding: where to place the result (a sharding; None: as XLA chooses).

  Returns:
    The convolution, laid out as `dimension_numbers`' output spec says.

  Example:
    >>> x, w = jnp.ones((1, 5, 5, 2)), jnp.ones((3, 3, 2, 4))
    >>> y = lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
    >>> y.shape
    (1, 5, 5, 4)
    >>> y[0, :, :, 0]  # 2 channels times the 3x3 window's in-bounds cells
    Array([[ 8., 12., 12., 12.,  8.],
           [12., 18., 18., 18., 12.],
           [12., 18., 18., 18., 12.],
           [12., 18., 18., 18., 12.],
           [ 8., 12., 12., 12.,  8.]], dtype=float32)
  """
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  if len(lhs_shape) != len(rhs_shape):
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of dimensions, "
                     f"but got {lhs_shape} and {rhs_shape}.")
  _check_dimension_numbers(dnums, len(lhs_shape), len(rhs_shape))
  n_spatial = len(lhs_shape) - 2
  window_strides = _int_tuple(window_strides, "window_strides")
  if lhs_dilation is None:
    lhs_dilation = (1,) * n_spatial
  else:
    lhs_dilation = _int_tuple(lhs_dilation, "lhs_dilation")
    if isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for transposed convolution using this "
                       "op. Please either exactly specify the required padding or use "
                       "conv_transpose.")
  rhs_dilation = (1,) * n_spatial if rhs_dilation is None else \
      _int_tuple(rhs_dilation, "rhs_dilation")
  if isinstance(padding, str):  # the pads depend on strides and window: check those first
    _check_window(lhs_shape, window_strides, rhs_dilation)
    in_spatial = [lhs_shape[d] for d in dnums.lhs_spec[2:]]
    window = [_dilate_dim(rhs_shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
    padding = _conv_padding(in_spatial, window, window_strides, padding)
  else:
    try:
      padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (ValueError, TypeError) as e:
      raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                       f"sequence of (low, high) pairs, got {padding}") from e
  pref = None if preferred_element_type is None else \
      dtypes.canonicalize_dtype(preferred_element_type)
  bind = functools.partial(
      conv_general_dilated_p.bind, lhs, rhs, window_strides=window_strides, padding=padding,
      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dnums,
      feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=_canonicalize_precision(precision), preferred_element_type=pref)
  if out_sharding is None:
    return bind()
  with sharding_types.internal_expansion():  # out_sharding settles what the rule cannot tell
    out = bind()
  return placed(out, out_sharding)


def _conv_out_shape(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape, as Python ints, of a convolution of operands in canonical order
  ((N, C, ...), (O, I, ...)); `pads` is a padding string or (lo, hi) pairs."""
  if isinstance(pads, str):
    pads = _conv_padding(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [canonical_dim(n) + int(lo) + int(hi) for n, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(p < 0 for p in padded):
    raise ValueError(f"Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={tuple(pads)} for lhs_shape[2:]={tuple(lhs_shape[2:])}")
  spatial = tuple(max_dim((p - int(k)) // int(s) + 1, 0)  # JAX's stride_dim
                  for p, k, s in zip(padded, rhs_shape[2:], strides, strict=True))
  return (canonical_dim(lhs_shape[0]) // batch_group_count, int(rhs_shape[0])) + spatial


# The public shape-tuple helpers return the element types JAX's do (they are printed, e.g. as
# the output shapes of stax layers): JAX computes the spatial sizes with NumPy, so they are
# np.int64 (the default NumPy integer), and the permuting helpers pass every entry through
# np.take; batch and feature sizes of conv_shape_tuple keep the caller's type.

def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape of a convolution of operands in canonical order ((N, C, ...), (O, I, ...)).

  `pads` is a padding string or (lo, hi) pairs.
  """
  out = _conv_out_shape(lhs_shape, rhs_shape, strides, pads, batch_group_count)
  batch = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
  return (batch, rhs_shape[0]) + tuple(np.int_(d) for d in out[2:])


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  """The output shape of `conv_general_dilated` without dilation or groups."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = _conv_out_shape(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                        window_strides, padding)
  return tuple(np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  """The output shape of `conv_transpose` (without rhs dilation)."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t = np.take(lhs_shape, lhs_perm)
  rhs_t = np.take(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
  spatial = [(int(i) - 1) * int(s) - int(k) + 2 + int(np.sum(p))
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  out = (int(lhs_t[0]), int(rhs_t[0])) + tuple(spatial)
  return tuple(np.take(out, np.argsort(out_perm)))


def _check_preferred(input_dtype, preferred) -> None:
  """As jax.lax: integer -> float is allowed; otherwise same kind, same signedness, no
  narrowing."""
  if dtypes.is_integer(input_dtype) and dtypes.is_float(preferred):
    pass
  else:
    kinds = (dtypes.is_integer, dtypes.is_float, dtypes.is_complex)
    if any(kind(input_dtype) and not kind(preferred) for kind in kinds) or \
        (dtypes.is_bool(input_dtype) != dtypes.is_bool(preferred)):
      raise TypeError(f"conv_general_dilated: input type {np.dtype(input_dtype).name} is "
                      f"incompatible with preferred_element_type {np.dtype(preferred).name}. The "
                      f"compatible combinations of (input_type, preferred_element_type) are "
                      f"(integral, integral), (integral, floating), (floating, floating), "
                      f"(complex, complex).")
    if dtypes.is_signed_integer(input_dtype) and not dtypes.is_signed_integer(preferred):
      raise TypeError("`preferred_element_type` must have the same signedness as the original "
                      "type.")
  if np.dtype(preferred).itemsize < np.dtype(input_dtype).itemsize:
    raise TypeError(f"`preferred_element_type` must not be narrower than the original type, got "
                    f"{np.dtype(preferred).name} for {np.dtype(input_dtype).name} operands.")


def _check_window(lhs_shape, window_strides, rhs_dilation, **more):
  """One entry per spatial dimension in each window parameter; positive strides and
  dilations."""
  n_spatial = len(lhs_shape) - 2
  params = dict(window_strides=window_strides, rhs_dilation=rhs_dilation, **more)
  for what, xs in params.items():
    if len(xs) != n_spatial:
      raise ValueError(f"conv_general_dilated {what} must have one entry per spatial dimension "
                       f"({n_spatial} for lhs shape {lhs_shape}), got {what}={tuple(xs)}")
  if any(s <= 0 for s in window_strides):
    raise ValueError(f"conv_general_dilated window_strides must be positive, got "
                     f"{window_strides}.")
  for what in ("lhs_dilation", "rhs_dilation"):
    if what in params and any(d <= 0 for d in params[what]):
      raise TypeError(f"All dilations must be positive, got {params[what]}.")


def _conv_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count):
  """The output shape, after checking every parameter (nothing malformed may reach XLA)."""
  if len(lhs_shape) != len(rhs_shape):
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of dimensions, "
                     f"but got {lhs_shape} and {rhs_shape}.")
  if len(lhs_shape) < 2:
    raise ValueError(f"conv_general_dilated operands must have rank at least 2 (batch and "
                     f"feature dimensions), got shapes {lhs_shape} and {rhs_shape}.")
  _check_dimension_numbers(dimension_numbers, len(lhs_shape), len(rhs_shape))
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  _check_window(lhs_shape, window_strides, rhs_dilation, padding=padding,
                lhs_dilation=lhs_dilation)

  if feature_group_count <= 0:
    raise ValueError(f"conv_general_dilated feature_group_count must be a positive integer, got "
                     f"{feature_group_count}.")
  if batch_group_count <= 0:
    raise ValueError(f"conv_general_dilated batch_group_count must be a positive integer, got "
                     f"{batch_group_count}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError(f"At most one of batch_group_count and feature_group_count may be > 1, got "
                     f"batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")
  lhs_features = lhs_shape[lhs_spec[1]]
  rhs_in, rhs_out = rhs_shape[rhs_spec[1]], rhs_shape[rhs_spec[0]]
  if lhs_features % feature_group_count:
    raise ValueError(f"conv_general_dilated feature_group_count must divide lhs feature dimension "
                     f"size, but {feature_group_count} does not divide {lhs_features} (lhs shape "
                     f"{lhs_shape}).")
  if lhs_features // feature_group_count != rhs_in:
    raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                     f"feature_group_count must equal the rhs input feature dimension size, but "
                     f"{lhs_features} // {feature_group_count} != {rhs_in} (lhs shape {lhs_shape}, "
                     f"rhs shape {rhs_shape}).")
  if rhs_out % feature_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a multiple "
                     f"of feature_group_count, but {rhs_out} is not a multiple of "
                     f"{feature_group_count} (rhs shape {rhs_shape}).")
  lhs_batch = lhs_shape[lhs_spec[0]]
  if lhs_batch % batch_group_count:
    raise ValueError(f"conv_general_dilated batch_group_count must divide lhs batch dimension "
                     f"size, but {batch_group_count} does not divide {lhs_batch} (lhs shape "
                     f"{lhs_shape}).")
  if rhs_out % batch_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a multiple "
                     f"of batch_group_count, but {rhs_out} is not a multiple of "
                     f"{batch_group_count} (rhs shape {rhs_shape}).")

  lhs_t = [lhs_shape[d] for d in lhs_spec]
  rhs_t = [rhs_shape[d] for d in rhs_spec]
  lhs_t[2:] = [_dilate_dim(n, d) for n, d in zip(lhs_t[2:], lhs_dilation)]
  rhs_t[2:] = [_dilate_dim(n, d) for n, d in zip(rhs_t[2:], rhs_dilation)]
  out_t = _conv_out_shape(lhs_t, rhs_t, window_strides, padding, batch_group_count)
  return tuple(out_t[k] for k in np.argsort(out_spec))


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
  if lhs.dtype != rhs.dtype:
    raise TypeError(f"lax.conv_general_dilated requires arguments to have the same dtypes, got "
                    f"{lhs.dtype.name}, {rhs.dtype.name}.")
  shape = _conv_shape(lhs.shape, rhs.shape, window_strides=window_strides, padding=padding,
                      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                      dimension_numbers=dimension_numbers,
                      feature_group_count=feature_group_count,
                      batch_group_count=batch_group_count)
  if preferred_element_type is None:
    return ShapedArray(shape, lhs.dtype, lhs.weak_type and rhs.weak_type)
  _check_preferred(lhs.dtype, preferred_element_type)
  return ShapedArray(shape, preferred_element_type)


def _dilate_pad_spatial(x, dilation, padding):
  """x of shape (N, C, spatial...) with interior zeros (dilation - 1 between neighbours) and
  (lo, hi) edge padding on the spatial dims; negative pads crop after dilating."""
  grown, place, cut = list(x.shape[:2]), [slice(None)] * 2, [slice(None)] * 2
  for n, d, (lo, hi) in zip(x.shape[2:], dilation, padding, strict=True):
    inner = _dilate_dim(n, d)
    lo_pos, hi_pos = max(lo, 0), max(hi, 0)
    grown.append(lo_pos + inner + hi_pos)
    place.append(slice(lo_pos, lo_pos + inner, d))
    cut.append(slice(max(-lo, 0), grown[-1] - max(-hi, 0)))
  if all(d == 1 for d in dilation) and all(lo == hi == 0 for lo, hi in padding):
    return x
  out = np.zeros(grown, x.dtype)
  out[tuple(place)] = x
  return out[tuple(cut)]


def _conv_numpy(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
  """Reference convolution: dilate and pad the input, dilate the kernel, take every window
  (a strided view), and contract windows with the kernel per group in one einsum."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
  if dtypes.is_bool(lhs.dtype):
    compute = np.dtype(np.int32)
  else:
    compute = np.promote_types(lhs.dtype, out_dtype)
    if compute in (dtypes.bfloat16, dtypes.float16):
      compute = np.dtype(np.float32)  # accumulate low-precision floats in f32, as XLA does
  x = np.transpose(lhs, lhs_spec).astype(compute)
  w = np.transpose(rhs, rhs_spec).astype(compute)
  x = _dilate_pad_spatial(x, lhs_dilation, padding)
  n, c = x.shape[:2]
  o, i = w.shape[:2]
  window = w.shape[2:]
  dilated = tuple(_dilate_dim(k, d) for k, d in zip(window, rhs_dilation))
  bgc, fgc = batch_group_count, feature_group_count
  spatial = tuple(max((p - k) // s + 1, 0) for p, k, s in zip(x.shape[2:], dilated, window_strides))
  out_t_shape = (n // bgc, o) + spatial
  if 0 in out_t_shape or 0 in window or c == 0:
    res = np.zeros(out_t_shape, compute)
  else:
    nsp = len(spatial)
    axes = tuple(range(2, 2 + nsp))
    # every window of the dilated kernel's extent, strided; the kernel's dilation is a stride
    # within each window (no zeros are multiplied)
    wins = np.lib.stride_tricks.sliding_window_view(x, dilated, axis=axes)
    wins = wins[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in window_strides)
                + tuple(slice(None, None, d) for d in rhs_dilation)]
    # wins: (n, c, out spatial..., window...); split batch and features into their groups
    wins = wins.reshape((bgc, n // bgc, fgc, c // fgc) + spatial + window)
    w = w.reshape((bgc, fgc, o // (bgc * fgc), i) + window)
    sp = "".join(chr(ord("p") + k) for k in range(nsp))  # output spatial letters
    kw = "".join(chr(ord("F") + k) for k in range(nsp))  # window letters
    res = np.einsum(f"bngc{sp}{kw},bgoc{kw}->nbgo{sp}", wins, w, optimize=True)
    res = res.reshape(out_t_shape)
  if dtypes.is_bool(out_dtype):
    res = res > 0
  return np.transpose(res, tuple(int(k) for k in np.argsort(out_spec))).astype(out_dtype)


def _conv_dnums_attr(dnums: ConvDimensionNumbers) -> str:
  """`#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]>`: each operand's dimensions,
  labelled in position order by role."""
  def labels(spec, batch, feature):
    out = [""] * len(spec)
    out[spec[0]], out[spec[1]] = batch, feature
    for k, d in enumerate(spec[2:]):
      out[d] = str(k)
    return "[" + ", ".join(out) + "]"
  lhs_spec, rhs_spec, out_spec = dnums
  return (f"#stablehlo.conv<{labels(lhs_spec, 'b', 'f')}x{labels(rhs_spec, 'o', 'i')}->"
          f"{labels(out_spec, 'b', 'f')}>")


def _conv_lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
  n = len(window_strides)
  lhs_aval = ctx.avals_in[0]
  canonical = _channels_last(n)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  if any(lo < 0 or hi < 0 for lo, hi in padding):
    # XLA:CPU reads the wrong memory for a negative padding with a stride > 1 (found by the
    # fuzzer; jax.jit shares the bug): crop those dims with a slice of the lhs (in the
    # channels-last layout, right before the convolution: im2col.py reads it back) and hand the
    # convolution only non-negative padding.
    lhs_perm = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
    lhs = _transposed(ctx, lhs, lhs_aval, lhs_perm)
    lhs_aval = lhs_aval.update(shape=tuple(lhs_aval.shape[p] for p in lhs_perm))
    lhs_spec = canonical[0]
    dimension_numbers = ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)
    lhs, lhs_aval, padding, lhs_dilation = _crop_negative_padding(
        ctx, lhs, lhs_aval, padding, lhs_dilation, lhs_spec)
  pad_attr = (f"dense<> : tensor<0x2xi64>" if n == 0 else mlir.i64_dense(padding, (n, 2)))
  reversal = "array<i1>" if n == 0 else f"array<i1: {', '.join(['false'] * n)}>"
  props = {"batch_group_count": f"{batch_group_count} : i64",
           "dimension_numbers": _conv_dnums_attr(dimension_numbers),
           "feature_group_count": f"{feature_group_count} : i64",
           "lhs_dilation": mlir.i64_array(lhs_dilation),
           "padding": pad_attr}
  if precision is None:
    precision = dot_algorithms.config_precision()
  if precision is not None:
    props["precision_config"] = ("[" + ", ".join(f"#stablehlo<precision {p}>" for p in precision)
                                 + "]")
  props.update({"rhs_dilation": mlir.i64_array(rhs_dilation), "window_reversal": reversal,
                "window_strides": mlir.i64_array(window_strides)})
  if n == 0 or dimension_numbers == canonical:
    return ctx.op1("stablehlo.convolution", [lhs, rhs], props=props)
  # Other layouts go through explicit transposes to NHWC x HWIO -> NHWC. XLA:CPU rewrites
  # convolutions into its fast form only at a program's top level; inside a conditional's branch
  # (checkpoint's and invertible's fenced backward pass) any other layout runs a slow loop,
  # measured 12-60x slower. At top level XLA folds the transposes back into the convolution.
  lhs_perm = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
  rhs_perm = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
  lhs_t = _transposed(ctx, lhs, lhs_aval, lhs_perm)
  rhs_t = _transposed(ctx, rhs, ctx.avals_in[1], rhs_perm)
  out_aval = ctx.avals_out[0]
  canon_out = (out_spec[0], *out_spec[2:], out_spec[1])
  canon_aval = out_aval.update(shape=tuple(out_aval.shape[d] for d in canon_out))
  props["dimension_numbers"] = _conv_dnums_attr(canonical)
  out = ctx.op1("stablehlo.convolution", [lhs_t, rhs_t], canon_aval, props=props)
  back = [0] * (n + 2)
  for k, d in enumerate(canon_out):
    back[d] = k
  return _transposed(ctx, out, canon_aval, tuple(back))


def _crop_negative_padding(ctx, lhs, aval, padding, lhs_dilation, lhs_spec):
  """The lhs sliced along the spatial dims whose padding has a negative side, with that padding
  made non-negative: a negative side crops whole input elements, and what it cropped of the
  last one's dilation holes becomes padding. Holes and padding stay holes and padding (XLA
  leaves both out of some convolutions' sums where a filter holds NaN or inf, see
  revax/_src/runtime/conv_nonfinite.py), never explicit zeros. A dim cropped to nothing keeps
  no element and all its length as padding, split where the low side's crop left it."""
  start, limit = [0] * aval.ndim, list(aval.shape)
  new_padding = list(padding)
  for k, ((lo, hi), d) in enumerate(zip(padding, lhs_dilation, strict=True)):
    if lo >= 0 and hi >= 0:
      continue
    dim, size = lhs_spec[2 + k], aval.shape[lhs_spec[2 + k]]
    first = -(lo // d) if lo < 0 else 0  # ceil(-lo / d) elements cropped at the low end
    last = -(hi // d) if hi < 0 else 0
    if first + last >= size:  # nothing left: every position padding (as holes and padding are)
      start[dim] = limit[dim] = min(first, size)  # (where im2col.py reads the low padding back)
      total = max((size - 1) * d + 1, 0) + lo + hi
      low = min(max(lo + start[dim] * d, 0), max(total, 0))
      new_padding[k] = (low, total - low)
      continue
    start[dim], limit[dim] = first, size - last
    new_padding[k] = (first * d + lo if lo < 0 else lo, last * d + hi if hi < 0 else hi)
  new_aval = aval.update(shape=tuple(b - a for a, b in zip(start, limit)))
  out = ctx.op1("stablehlo.slice", [lhs], new_aval,
                props={"start_indices": mlir.i64_array(start),
                       "limit_indices": mlir.i64_array(limit),
                       "strides": mlir.i64_array([1] * aval.ndim)})
  return out, new_aval, tuple(new_padding), tuple(lhs_dilation)


def _channels_last(n: int) -> "ConvDimensionNumbers":
  """NHWC x HWIO -> NHWC for `n` spatial dimensions."""
  spatial = tuple(range(1, n + 1))
  return ConvDimensionNumbers((0, n + 1) + spatial, (n + 1, n) + tuple(range(n)),
                              (0, n + 1) + spatial)


def _transposed(ctx, x, aval, perm):
  if perm == tuple(range(len(perm))):
    return x
  result = aval.update(shape=tuple(aval.shape[p] for p in perm))
  return ctx.op1("stablehlo.transpose", [x], result, props={"permutation": mlir.i64_array(perm)})


def _complex_conv(lhs, rhs, **params):
  """A complex convolution as three real ones (Gauss's trick), as JAX lowers it on CPU and GPU
  (XLA:CPU runs complex convolutions in a slow loop, XLA:GPU not at all)."""
  pref = params.pop("preferred_element_type")
  if pref is not None:
    pref = np.finfo(pref).dtype
  conv = functools.partial(conv_general_dilated_p.bind, preferred_element_type=pref, **params)
  x_re, x_im, y_re, y_im = real(lhs), imag(lhs), real(rhs), imag(rhs)
  k1 = conv(add(x_re, x_im), y_re)
  k2 = conv(x_re, sub(y_im, y_re))
  k3 = conv(x_im, add(y_re, y_im))
  return _complex(sub(k1, k3), add(k1, k2))


_complex_conv_lower = mlir.lower_fun(_complex_conv, multiple_results=False)


def _conv_lower_expanding_complex(ctx, lhs, rhs, **params):
  if dtypes.is_complex(ctx.avals_in[0].dtype):
    return _complex_conv_lower(ctx, lhs, rhs, **params)
  return _conv_lower(ctx, lhs, rhs, **params)


# Transposes. Ignoring spatial dimensions, with m = batch, j = in feature, k = out feature, the
# convolution is the contraction [m, j] x [j, k] -> [m, k]; its transposes are
#   lhs: [m, k] x [k, j] -> [m, j]   (the kernel with its feature roles swapped)
#   rhs: [j, m] x [m, k] -> [j, k]   (batch and feature roles swapped in lhs and output).
# With G feature groups, [m, G j] x [j, G k] -> [m, G k]: the lhs transpose is again G feature
# groups once the group moves from the kernel's out features into its in features; the rhs
# transpose [G j, m] x [m, G k] -> [j, G k] groups the new batch (G batch groups). With G batch
# groups, [G m, j] x [j, G k] -> [m, G k]: the lhs transpose is G feature groups whose output
# features then fold back into the batch; the rhs transpose is G feature groups.
# Spatially, the lhs transpose slides the reversed kernel over the output cotangent dilated by
# the strides (lhs_dilation <-> window_strides), and the rhs transpose slides the output
# cotangent (dilated by the strides) over the lhs (rhs_dilation <-> window_strides); the pads
# below make the result exactly the operand's size.

def _swap_roles(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window_shape, window_strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
  pads = []
  for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window_shape, window_strides, out_shape,
                                         padding, lhs_dilation, rhs_dilation, strict=True):
    lhs_d, rhs_d, out_d = _dilate_dim(n, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
    before = rhs_d - lo - 1
    pads.append((before, lhs_d + rhs_d - 1 - out_d - before))
  return tuple(pads)


def _vjp_rhs_padding(in_shape, window_shape, window_strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
  pads = []
  for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window_shape, window_strides, out_shape,
                                         padding, lhs_dilation, rhs_dilation, strict=True):
    lhs_d, rhs_d, out_d = _dilate_dim(n, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
    pads.append((lo, (out_d - lhs_d) + (rhs_d - lo - 1)))
  return tuple(pads)


def _conv_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
  lhs_aval, rhs_aval, ct_aval = lhs.aval, get_aval(rhs), get_aval(ct)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  groups = max(feature_group_count, batch_group_count)
  if groups > 1:  # move the group from the kernel's out features into its in features
    rhs = _split_axis(rhs, rhs_spec[0], groups)
    rhs = _merge_axis(rhs, rhs_spec[0], rhs_spec[1])
  pads = _vjp_lhs_padding([lhs_aval.shape[d] for d in lhs_spec[2:]],
                          [rhs_aval.shape[d] for d in rhs_spec[2:]], window_strides,
                          [ct_aval.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                          rhs_dilation)
  kernel = rev(rhs, rhs_spec[2:])
  if get_aval(kernel).dtype != ct_aval.dtype:
    kernel = convert_element_type(kernel, ct_aval.dtype)
  out = conv_general_dilated_p.bind(
      ct, kernel, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
      rhs_dilation=rhs_dilation,
      dimension_numbers=ConvDimensionNumbers(out_spec, _swap_roles(rhs_spec), lhs_spec),
      feature_group_count=groups, batch_group_count=1, precision=precision,
      preferred_element_type=preferred_element_type)
  if get_aval(out).dtype != lhs_aval.dtype:
    out = convert_element_type(out, lhs_aval.dtype)
  if batch_group_count > 1:  # the groups' output features are the batch groups
    out = _split_axis(out, lhs_spec[1], batch_group_count)
    out = _merge_axis(out, lhs_spec[1], lhs_spec[0])
  return out


def _conv_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
  lhs_aval, rhs_aval, ct_aval = get_aval(lhs), rhs.aval, get_aval(ct)
  if ct_aval.size == 0:  # no degenerate convolution with an empty kernel
    return ad.Zero(rhs_aval)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  pads = _vjp_rhs_padding([lhs_aval.shape[d] for d in lhs_spec[2:]],
                          [rhs_aval.shape[d] for d in rhs_spec[2:]], window_strides,
                          [ct_aval.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                          rhs_dilation)
  if lhs_aval.dtype != ct_aval.dtype:
    lhs = convert_element_type(lhs, ct_aval.dtype)
  out = conv_general_dilated_p.bind(
      lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
      rhs_dilation=window_strides,
      dimension_numbers=ConvDimensionNumbers(_swap_roles(lhs_spec), _swap_roles(out_spec),
                                             _swap_roles(rhs_spec)),
      feature_group_count=batch_group_count, batch_group_count=feature_group_count,
      precision=precision, preferred_element_type=preferred_element_type)
  if get_aval(out).dtype != rhs_aval.dtype:
    out = convert_element_type(out, rhs_aval.dtype)
  return out


def _merge_axis(x, src: int, dst: int):
  """Fold axis `src` of `x` into axis `dst` (numbered after `src` is removed), as its major
  part: one reshape (which transposes first when `src` is not next to `dst`)."""
  shape = get_aval(x).shape
  perm = [d for d in range(len(shape)) if d != src]
  perm.insert(dst, src)
  new_shape = [s for d, s in enumerate(shape) if d != src]
  new_shape[dst] *= shape[src]
  return reshape(x, tuple(new_shape), tuple(perm))


def _split_axis(x, axis: int, major: int):
  """Split axis `axis` of `x` into (major, rest): a reshape, no data moves."""
  shape = list(get_aval(x).shape)
  shape[axis:axis + 1] = [major, shape[axis] // major]
  return reshape(x, tuple(shape))


def _conv_batch(vals, dims, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
  """Fold the mapped axis into the convolution instead of looping:
  - both mapped: the examples become extra feature groups (or batch groups): lhs's axis joins
    its feature (batch) dim, rhs's its out-feature dim, and the output's features split back;
  - lhs mapped: the axis joins the batch (inside each batch group);
  - rhs mapped: the axis joins the out features (inside each group)."""
  (lhs, rhs), (lbd, rbd) = vals, dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                precision=precision, preferred_element_type=preferred_element_type)
  size = get_aval(lhs).shape[lbd] if lbd is not None else get_aval(rhs).shape[rbd]
  if size == 0:  # no group count of zero: the empty result directly
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    lhs_shape = lhs_aval.shape if lbd is None else lhs_aval.shape[:lbd] + lhs_aval.shape[lbd + 1:]
    rhs_shape = rhs_aval.shape if rbd is None else rhs_aval.shape[:rbd] + rhs_aval.shape[rbd + 1:]
    shape = _conv_shape(lhs_shape, rhs_shape, window_strides=window_strides, padding=padding,
                        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                        dimension_numbers=dimension_numbers,
                        feature_group_count=feature_group_count,
                        batch_group_count=batch_group_count)
    dtype = lhs_aval.dtype if preferred_element_type is None else preferred_element_type
    return full((0,) + shape, 0, dtype), 0

  if lbd is not None and rbd is not None:
    if batch_group_count > 1:
      new_lhs = _merge_axis(lhs, lbd, lhs_spec[0])
      groups = dict(feature_group_count=feature_group_count,
                    batch_group_count=batch_group_count * size)
    else:
      new_lhs = _merge_axis(lhs, lbd, lhs_spec[1])
      groups = dict(feature_group_count=feature_group_count * size,
                    batch_group_count=batch_group_count)
    new_rhs = _merge_axis(rhs, rbd, rhs_spec[0])
    out = conv_general_dilated_p.bind(new_lhs, new_rhs, **groups, **params)
    return _split_axis(out, out_spec[1], size), out_spec[1]

  groups = dict(feature_group_count=feature_group_count, batch_group_count=batch_group_count)
  if lbd is not None:
    if batch_group_count == 1:
      new_lhs = _merge_axis(lhs, lbd, lhs_spec[0])
    else:  # batch (G, n) -> (G, size * n): each batch group keeps its examples together
      b = lhs_spec[0] + (lbd <= lhs_spec[0])
      new_lhs = _split_axis(lhs, b, batch_group_count)
      new_lhs = _merge_axis(new_lhs, lbd + (lbd > b), lhs_spec[0] + 1)
      new_lhs = _merge_axis(new_lhs, lhs_spec[0], lhs_spec[0])
    out = conv_general_dilated_p.bind(new_lhs, rhs, **groups, **params)
    return _split_axis(out, out_spec[0], size), out_spec[0]

  group_count = max(feature_group_count, batch_group_count)
  if group_count == 1:
    new_rhs = _merge_axis(rhs, rbd, rhs_spec[0])
    out = conv_general_dilated_p.bind(lhs, new_rhs, **groups, **params)
    return _split_axis(out, out_spec[1], size), out_spec[1]
  # out features (G, k) -> (G, size * k): groups stay outermost; the output splits the same way
  o = rhs_spec[0] + (rbd <= rhs_spec[0])
  new_rhs = _split_axis(rhs, o, group_count)
  new_rhs = _merge_axis(new_rhs, rbd + (rbd > o), rhs_spec[0] + 1)
  new_rhs = _merge_axis(new_rhs, rhs_spec[0], rhs_spec[0])
  out = conv_general_dilated_p.bind(lhs, new_rhs, **groups, **params)
  out = _split_axis(out, out_spec[1], group_count)  # (G, size * k)
  out = _split_axis(out, out_spec[1] + 1, size)  # (G, size, k)
  return _merge_axis(out, out_spec[1], out_spec[1] + 1), out_spec[1]  # (size, G * k)


conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.def_abstract_eval(_conv_abstract_eval)
dispatch.def_numpy_impl(conv_general_dilated_p, _conv_numpy)
mlir.register_lowering(conv_general_dilated_p, _conv_lower)
mlir.register_lowering(conv_general_dilated_p, _conv_lower_expanding_complex, platform="cpu")
mlir.register_lowering(conv_general_dilated_p, _conv_lower_expanding_complex, platform="cuda")
ad.defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)
batching.primitive_batchers[conv_general_dilated_p] = _conv_batch
inv.not_invertible(conv_general_dilated_p, "it would need a deconvolution (a linear solve)")


# --- wrappers ------------------------------------------------------------------------------------
def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """`conv_general_dilated` in the default layout (NCHW input, OIHW kernel) without dilation.

  Args:
    lhs: the input (N, C, spatial...).
    rhs: the kernel (O, I, spatial...).
    window_strides: one stride per spatial dimension.
    padding: 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs.
    precision, preferred_element_type: as for `conv_general_dilated`.

  Returns:
    The convolution (N, O, spatial...).

  Example:
    >>> lax.conv(jnp.ones((1, 2, 5, 5)), jnp.ones((4, 2, 3, 3)), (1, 1), 'SAME').shape
    (1, 4, 5, 5)
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """`conv_general_dilated` in the default layout with padding and dilations.

  Args:
    lhs, rhs, window_strides, padding: as for `conv`.
    lhs_dilation, rhs_dilation: None or one factor per spatial dimension.
    precision, preferred_element_type: as for `conv_general_dilated`.

  Returns:
    The convolution (N, O, spatial...).
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
  """(before, after) padding of one spatial dim of a transposed convolution whose forward
  convolution had kernel size k (dilated), stride s and `padding`."""
  if padding == "SAME":
    pad_len = k + s - 2
    pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    pad_a = k - 1
  elif isinstance(padding, tuple):
    pads = tuple(k - p - 1 for p in padding)
    pad_a, pad_len = pads[0], sum(pads)
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return pad_a, pad_len - pad_a


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """A fractionally strided convolution ("deconvolution"), as jax.lax.conv_transpose.

  Args:
    lhs: the input, of rank n + 2.
    rhs: the kernel, of rank n + 2.
    strides: n fractional strides (the lhs dilation of the convolution computed).
    padding: 'SAME', 'VALID', or n (low, high) pairs. Strings (and, with
      `use_consistent_padding`, pairs too) describe the padding of the forward convolution this
      one transposes; otherwise pairs are the padding of the transposed convolution itself.
    rhs_dilation: None or n kernel dilation factors.
    dimension_numbers: as for `conv_general_dilated`; default the TensorFlow layout
      ('NHWC', 'HWIO', 'NHWC') of the operands' rank.
    transpose_kernel: flip the kernel's spatial dims and swap its feature dims (so the result
      is the gradient of a forward convolution with this kernel, as Keras' Conv2DTranspose).
    precision, preferred_element_type: as for `conv_general_dilated`.
    use_consistent_padding: read pairs as the forward convolution's padding too.

  Returns:
    The transposed convolution.
  """
  lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
  if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
    raise ValueError(f"conv_transpose requires operands of one rank >= 2, got shapes {lhs_shape} "
                     f"and {rhs_shape}")
  ndims = len(lhs_shape)
  if dimension_numbers is None:
    defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                5: ("NHWDC", "HWDIO", "NHWDC")}
    if ndims not in defaults:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = defaults[ndims]
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  _check_dimension_numbers(dn, ndims, ndims)
  strides = _int_tuple(strides, "strides")
  kernel_spatial = [rhs_shape[d] for d in dn.rhs_spec[2:]]
  if rhs_dilation is None:
    rhs_dilation = (1,) * (ndims - 2)
  if use_consistent_padding or (isinstance(padding, str) and padding in {"SAME", "VALID"}):
    effective = [_dilate_dim(k, r) for k, r in zip(kernel_spatial, rhs_dilation)]
    per_dim = [padding] * len(strides) if isinstance(padding, str) else \
        [tuple(p) for p in padding]
    pads = tuple(_conv_transpose_padding(k, s, p)
                 for k, s, p in zip(effective, strides, per_dim, strict=True))
  else:
    pads = padding
  if transpose_kernel:
    rhs = rev(rhs, dn.rhs_spec[2:])
    perm = list(range(ndims))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
    rhs = transpose(rhs, tuple(perm))
  return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                              precision=precision, preferred_element_type=preferred_element_type)
