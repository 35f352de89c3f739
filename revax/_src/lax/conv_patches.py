"""Patch extraction and unshared (locally connected) convolution, composed from
`conv_general_dilated` and `dot_general` as in JAX (no primitive of their own).

`conv_general_dilated_patches` convolves the input with a one-hot kernel, grouped per input
feature, so that each output feature is one element of the receptive window: the output's
feature dimension holds flattened patches, ordered input feature first, then the window
dimensions in the order of the rhs spec. `conv_general_dilated_local` contracts those patches
with a kernel that has one set of weights per output position (a batched dot over the output
spatial dimensions). Every transformation comes from the primitives they are made of.
"""
from __future__ import annotations

import math
from typing import Sequence, Union

import numpy as np

from revax._src.core.avals import get_aval
from revax._src.lax import convolution, shapes
from revax._src.lax.dot import Precision, _canonicalize_precision, dot_general
from revax._src.lax.convolution import ConvDimensionNumbers

__all__ = ["conv_general_dilated_patches", "conv_general_dilated_local",
           "ConvGeneralDilatedDimensionNumbers"]

# What `dimension_numbers` of a convolution may be (as jax.lax names it).
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


def _moveaxes(x, src: Sequence[int], dst: Sequence[int]):
  """numpy.moveaxis for several axes, as one transpose."""
  ndim = get_aval(x).ndim
  src = [s % ndim for s in src]
  dst = [d % ndim for d in dst]
  rest = [i for i in range(ndim) if i not in src]
  perm = [None] * ndim
  for s, d in zip(src, dst, strict=True):
    perm[d] = s
  it = iter(rest)
  perm = tuple(next(it) if p is None else p for p in perm)
  return x if perm == tuple(range(ndim)) else shapes.transpose(x, perm)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The patches `conv_general_dilated` would see; as jax.lax.conv_general_dilated_patches.

  Args:
    lhs: the input, of rank n + 2.
    filter_shape: the n window sizes, in the order of the rhs spec's spatial dimensions.
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as in
      `conv_general_dilated`.
    precision: None or one `Precision` (for the lhs).
    preferred_element_type: the result dtype.

  Returns:
    An array laid out as the output spec, whose feature dimension holds each patch flattened
    (size `prod(filter_shape) * input features`, input feature major).

  Example:
    >>> x = jnp.arange(16.).reshape(1, 1, 4, 4)  # NCHW
    >>> p = lax.conv_general_dilated_patches(x, (3, 3), (1, 1), 'VALID')
    >>> p.shape  # (N, C * 3 * 3, H', W')
    (1, 9, 2, 2)
    >>> p[0, :, 0, 0]  # the top-left 3x3 window, flattened
    Array([ 0.,  1.,  2.,  4.,  5.,  6.,  8.,  9., 10.], dtype=float32)
  """
  lhs_aval = get_aval(lhs)
  filter_shape = tuple(int(d) for d in filter_shape)
  dnums = convolution.conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape,
                                             dimension_numbers)
  lhs_spec, rhs_spec, _ = dnums
  window = math.prod(filter_shape)
  channels = lhs_aval.shape[lhs_spec[1]]
  eye = np.eye(window, dtype=lhs_aval.dtype)
  kernel = np.broadcast_to(eye, (channels, window, window)).reshape(
      (channels * window, 1) + filter_shape)
  kernel = np.moveaxis(kernel, (0, 1), (rhs_spec[0], rhs_spec[1]))
  return convolution.conv_general_dilated(
      lhs, kernel, window_strides, padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dnums, feature_group_count=channels,
      precision=None if precision is None else (precision, Precision.DEFAULT),
      preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
  """Unshared convolution (a locally connected layer); as jax.lax.conv_general_dilated_local.

  Args:
    lhs: the input, of rank n + 2.
    rhs: the kernel, of rank n + 2: its spatial dimensions are the output positions, and its
      "I" dimension holds the patch (input feature major, then the window dimensions in the
      order of the rhs spec), "O" the output features.
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as in
      `conv_general_dilated`.
    filter_shape: the n window sizes, in the order of the rhs spec's spatial dimensions.
    precision: None, a `Precision`, or a pair (lhs, rhs) of them.

  Returns:
    The convolution with a separate kernel at each output position, laid out as the output
    spec.

  Example:
    >>> x = jnp.arange(16.).reshape(1, 1, 4, 4)  # NCHW
    >>> w = jnp.ones((1, 9, 2, 2)) * jnp.eye(2)  # OIHW: I = C * 3 * 3, one filter per output pixel
    >>> lax.conv_general_dilated_local(x, w, (1, 1), 'VALID', (3, 3))
    Array([[[[45.,  0.],
             [ 0., 90.]]]], dtype=float32)
  """
  pair = _canonicalize_precision(precision)
  patches = conv_general_dilated_patches(
      lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
      precision=None if pair is None else pair[0])
  lhs_shape = get_aval(lhs).shape
  _, rhs_spec, out_spec = convolution.conv_dimension_numbers(
      lhs_shape, (1, 1) + tuple(int(d) for d in filter_shape), dimension_numbers)
  lhs_batch = list(out_spec[2:])
  rhs_batch = [rhs_spec[2:][i] for i in sorted(range(len(lhs_batch)), key=lambda k: lhs_batch[k])]
  dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(sorted(lhs_batch)), tuple(rhs_batch)))
  out = dot_general(patches, rhs, dn, precision=precision)
  return _moveaxes(out, (-2, -1), (out_spec[0], out_spec[1]))
