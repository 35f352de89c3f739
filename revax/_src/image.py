"""Image resampling, as jax.image: `resize` and `scale_and_translate`.

Every method but nearest is separable and linear: for each spatial dimension that changes, an
(input size x output size) weight matrix is built from a kernel and the input is contracted
with it along that dimension. Output pixel i has its centre at input coordinate
`(i + 0.5) / scale - translation / scale - 0.5`; its weights are the kernel evaluated at the
distance to each input pixel (stretched by 1/scale when downsampling with `antialias`, a
low-pass filter), normalised to sum to one, and zero where the centre falls outside the input.
The area method weights each input pixel by its overlap with the output pixel's footprint;
'cubic-pytorch' (OpenCV's cubic, A = -0.75) repeats the edge pixels instead of dropping the
weight that falls outside. Nearest picks input pixel floor((i + 0.5) * in / out). As in JAX,
integer images come back float32 from every method but nearest.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from revax._src import lax
from revax._src.numpy import (contractions, creation, dtype_api, reductions, shape_ops, ufuncs,
                              util)

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
  """The resampling methods of `resize` and `scale_and_translate`."""
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str):
    """The method a name stands for ('nearest', 'linear'/'bilinear'/'trilinear'/'triangle',
    'lanczos3', 'lanczos5', 'cubic'/'bicubic'/'tricubic', 'cubic-pytorch'/'bicubic-pytorch',
    'area'); ValueError for any other."""
    for method, names in _NAMES.items():
      if s in names:
        return method
    raise ValueError(f'Unknown resize method "{s}"')


_NAMES = {
    ResizeMethod.NEAREST: ("nearest",),
    ResizeMethod.LINEAR: ("linear", "bilinear", "trilinear", "triangle"),
    ResizeMethod.LANCZOS3: ("lanczos3",),
    ResizeMethod.LANCZOS5: ("lanczos5",),
    ResizeMethod.CUBIC: ("cubic", "bicubic", "tricubic"),
    ResizeMethod.CUBIC_PYTORCH: ("cubic-pytorch", "bicubic-pytorch"),
    ResizeMethod.AREA: ("area",),
}


# --- kernels: weight of an input pixel at (non-negative) distance x ------------------------------
def _triangle(x):
  return ufuncs.maximum(0.0, 1.0 - x)


def _cubic(a):
  """Keys' cubic convolution kernel with parameter `a` (-0.5: Keys, -0.75: OpenCV)."""
  def kernel(x):
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return ufuncs.where(x >= 2.0, 0.0, ufuncs.where(x >= 1.0, far, near))
  return kernel


def _lanczos(radius):
  def kernel(x):
    y = radius * ufuncs.sin(np.pi * x) * ufuncs.sin(np.pi * x / radius)
    safe = ufuncs.where(x != 0, np.pi ** 2 * x * x, 1.0)
    return ufuncs.where(x > radius, 0.0, ufuncs.where(x > 1e-3, y / safe, 1.0))
  return kernel


_AREA = object()
_KERNELS = {  # method -> (radius, kernel)
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalised(weights):
  """Columns divided by their sums (a column summing to about zero becomes zero)."""
  total = reductions.sum(weights, axis=0, keepdims=True)
  tiny = 1000.0 * float(np.finfo(np.float32).eps)
  return ufuncs.where(ufuncs.abs(total) > tiny,
                      weights / ufuncs.where(total != 0, total, 1.0), 0.0)


def _weight_matrix(n_in: int, n_out: int, scale, translation, kernel, antialias: bool,
                   edge_padding: bool, radius: int):
  """The (n_in, n_out) weights taking one dimension of the input to the output."""
  dtype = dtype_api.result_type(scale, translation)
  inv_scale = 1.0 / scale
  stretch = ufuncs.maximum(inv_scale, 1.0) if antialias else 1.0
  out_pos = creation.arange(n_out, dtype=dtype)
  centres = (out_pos + 0.5) * inv_scale - translation * inv_scale - 0.5
  pad = 0
  if edge_padding:
    pad = radius
    if antialias:  # (unreachable from resize; as in JAX, the padding needs a static scale)
      pad = math.ceil(radius * max(1.0 / float(util.concrete_scalar(
          scale, "scale_and_translate", "scale")), 1.0))
  positions = creation.arange(-pad, n_in + pad, dtype=dtype)
  if kernel is _AREA:
    left = out_pos * inv_scale - translation * inv_scale
    right = left + inv_scale
    in_left = creation.arange(n_in, dtype=dtype)
    overlap = (ufuncs.minimum(right[None, :], in_left[:, None] + 1.0)
               - ufuncs.maximum(left[None, :], in_left[:, None]))
    weights = ufuncs.maximum(0.0, overlap)
  else:
    weights = kernel(ufuncs.abs(centres[None, :] - positions[:, None]) / stretch)
  if edge_padding:  # the weight of a pixel beyond the edge goes to the edge pixel
    rows = ufuncs.clip(positions.astype(np.int32), 0, n_in - 1)
    folded = creation.zeros((n_in, n_out), dtype=util.aval_of(weights).dtype)
    return _normalised(folded.at[rows].add(weights))
  inside = (centres >= -0.5) & (centres <= n_in - 0.5)
  return ufuncs.where(inside[None, :], _normalised(weights), 0.0)


def _method(method):
  return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _separable(x, shape, spatial_dims, scales, translations, method, antialias, precision):
  x = util.promote_args_inexact("resize", x)[0]
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  edge_padding = method == ResizeMethod.CUBIC_PYTORCH
  in_shape = util.aval_of(x).shape
  for d, scale, translation in zip(spatial_dims, scales, translations, strict=True):
    d = util.canonicalize_axis(d, len(in_shape))
    w = _weight_matrix(in_shape[d], shape[d], scale, translation, kernel, antialias,
                       edge_padding, radius).astype(util.aval_of(x).dtype)
    y = contractions.tensordot(x, w, axes=([d], [0]), precision=precision)
    x = shape_ops.moveaxis(y, -1, d)
  return x


def _check_shape(image, shape):
  if len(shape) != util.aval_of(image).ndim:
    raise ValueError(f"shape must have length equal to the number of dimensions of x;  "
                     f"{tuple(shape)} vs {util.aval_of(image).shape}")


def resize(image, shape, method, antialias: bool = True, precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape` (one size per dimension; the dimensions that change are
  resampled) with `method` ('nearest', 'linear', 'cubic', 'lanczos3', 'lanczos5', 'area',
  'cubic-pytorch' or a `ResizeMethod`). `antialias` low-pass filters when downsampling.

  Example:
    >>> revax.image.resize(jnp.array([[0.0, 1.0], [2.0, 3.0]]), (2, 4), "linear")
    Array([[0.  , 0.25, 0.75, 1.  ],
           [2.  , 2.25, 2.75, 3.  ]], dtype=float32)
  """
  util.check_arraylike("resize", image)
  image = util.as_array(image)
  shape = tuple(util.canonicalize_shape(shape, "resize shape"))
  _check_shape(image, shape)
  method = _method(method)
  in_shape = util.aval_of(image).shape
  dims = tuple(d for d in range(len(shape)) if in_shape[d] != shape[d])
  if method == ResizeMethod.NEAREST:
    for d in dims:
      src = np.floor(((np.arange(shape[d], dtype=np.float32) + 0.5) * np.float32(in_shape[d])
                      / np.float32(shape[d])).astype(np.float32)).astype(np.int32)
      image = creation.asarray(image)[(slice(None),) * d + (src,)]
    return image
  scales = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in dims]
  return _separable(image, shape, dims, scales, [0.0] * len(dims), method, antialias,
                    precision)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias: bool = True, precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape` through the map `out = in * scale + translation` of each of
  `spatial_dims` (scale and translation: one value per spatial dim, may be traced), with
  `method` (any but 'nearest')."""
  util.check_arraylike("scale_and_translate", image)
  image = util.as_array(image)
  shape = tuple(util.canonicalize_shape(shape, "scale_and_translate shape"))
  _check_shape(image, shape)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  spatial_dims = tuple(spatial_dims)
  scale, translation = util.as_array(scale), util.as_array(translation)
  if util.aval_of(scale).shape != (len(spatial_dims),) or \
      util.aval_of(translation).shape != (len(spatial_dims),):
    raise ValueError(f"scale_and_translate: scale and translation need one value per spatial "
                     f"dimension {spatial_dims}, got shapes {util.aval_of(scale).shape} and "
                     f"{util.aval_of(translation).shape}")
  scales = [scale[i] for i in range(len(spatial_dims))]
  translations = [translation[i] for i in range(len(spatial_dims))]
  return _separable(image, shape, spatial_dims, scales, translations, method, antialias,
                    precision)
