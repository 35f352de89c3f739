"""Op records for conv_general_dilated (and the wrappers that bind it), with a loop-based NumPy
reference written independently of the implementation: for every output position and kernel
tap it finds the lhs element the tap reads in the dilated, padded input (if any) and adds one
small matmul per group. Records stay small (batch 1-4, a few channels, 4x4-6x6 spatial) so the
generic suites (check_grads order 2, every vmap batch position) stay fast."""
import itertools

import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand

_bf16 = ml_dtypes.bfloat16


def _perms(dimension_numbers, ndim):
  """(lhs, rhs, out) permutations to canonical order (batch/out-feature, feature/in-feature,
  spatial... in the rhs string's order); None means the canonical layout itself."""
  if dimension_numbers is None:
    iota = tuple(range(ndim))
    return iota, iota, iota
  if not isinstance(dimension_numbers[0], str):
    return tuple(tuple(s) for s in dimension_numbers)
  lhs, rhs, out = dimension_numbers
  spatial = [c for c in rhs if c not in "OI"]
  return ((lhs.index("N"), lhs.index("C")) + tuple(lhs.index(c) for c in spatial),
          (rhs.index("O"), rhs.index("I")) + tuple(rhs.index(c) for c in spatial),
          (out.index("N"), out.index("C")) + tuple(out.index(c) for c in spatial))


def _same_pads(sizes, windows, strides, lower):
  pads = []
  for n, k, s in zip(sizes, windows, strides):
    total = max((-(-n // s) - 1) * s + k - n, 0)
    lo = total - total // 2 if lower else total // 2
    pads.append((lo, total - lo))
  return pads


def conv_reference(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                   dimension_numbers=None, feature_group_count=1, preferred_element_type=None):
  """XLA's convolution by its definition, in float64 (int64 for integers, OR of ANDs for bool)."""
  lhs, rhs = np.asarray(lhs), np.asarray(rhs)
  out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
  lp, rp, op = _perms(dimension_numbers, lhs.ndim)
  acc = np.int64 if lhs.dtype.kind in "iub" else (
      np.complex128 if lhs.dtype.kind == "c" else np.float64)
  x = np.transpose(lhs, lp).astype(acc)
  w = np.transpose(rhs, rp).astype(acc)
  n, c, *sizes = x.shape
  o, i, *kernel = w.shape
  nsp = len(sizes)
  strides = tuple(window_strides)
  ld = tuple(lhs_dilation or (1,) * nsp)
  rd = tuple(rhs_dilation or (1,) * nsp)
  dilated = [0 if s == 0 else (s - 1) * d + 1 for s, d in zip(sizes, ld)]
  windows = [0 if k == 0 else (k - 1) * d + 1 for k, d in zip(kernel, rd)]
  if isinstance(padding, str):
    padding = [(0, 0)] * nsp if padding == "VALID" else \
        _same_pads(dilated, windows, strides, padding == "SAME_LOWER")
  out_sizes = [max((dl + lo + hi - k) // s + 1, 0)
               for dl, (lo, hi), k, s in zip(dilated, padding, windows, strides)]
  groups = feature_group_count
  og = o // groups
  out = np.zeros((n, o, *out_sizes), acc)
  for pos in itertools.product(*map(range, out_sizes)):
    for tap in itertools.product(*map(range, kernel)):
      src = []
      for p, t, s, d, (lo, _), dl, ldil in zip(pos, tap, strides, rd, padding, dilated, ld):
        q = p * s + t * d - lo  # coordinate in the dilated (unpadded) input
        if q < 0 or q >= dl or q % ldil:
          break
        src.append(q // ldil)
      else:  # the tap reads lhs[:, :, src]
        xs = x[(slice(None), slice(None)) + tuple(src)]  # (n, c)
        ws = w[(slice(None), slice(None)) + tap]  # (o, i)
        for g in range(groups):
          out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
              xs[:, g * i:(g + 1) * i] @ ws[g * og:(g + 1) * og].T
  if out_dtype == np.bool_:
    out = out > 0
  return np.transpose(out, np.argsort(op)).astype(out_dtype)


def _batch_grouped_reference(lhs, rhs, window_strides, padding, batch_group_count, **kw):
  """Batch groups by definition: group b convolves the b-th chunk of the batch with the b-th
  chunk of the kernel's output features; the outputs are concatenated along features."""
  lp, rp, op = _perms(kw.get("dimension_numbers"), np.ndim(lhs))
  x = np.transpose(lhs, lp)
  w = np.transpose(rhs, rp)
  nb, ob = x.shape[0] // batch_group_count, w.shape[0] // batch_group_count
  canonical = dict(kw, dimension_numbers=None)
  outs = [conv_reference(x[b * nb:(b + 1) * nb], w[b * ob:(b + 1) * ob], window_strides,
                         padding, **canonical) for b in range(batch_group_count)]
  return np.transpose(np.concatenate(outs, axis=1), np.argsort(op))


def reference(lhs, rhs, window_strides, padding, batch_group_count=1, **kw):
  if batch_group_count > 1:
    return _batch_grouped_reference(lhs, rhs, window_strides, padding, batch_group_count, **kw)
  return conv_reference(lhs, rhs, window_strides, padding, **kw)


def _conv(name, lhs_shape, rhs_shape, strides, padding, dtype=np.float32, swap=False, **kw):
  """A record of conv_general_dilated(lhs, rhs, ...). Linear in its first argument: with
  `swap` the function takes (rhs, lhs) so the transposition suite checks the rhs transpose."""
  fun = lambda x, y: lax.conv_general_dilated(x, y, strides, padding, **kw)
  ref = lambda x, y: reference(x, y, strides, padding, **kw)
  shapes = (lhs_shape, rhs_shape)
  if swap:
    fun, ref, shapes = (lambda y, x, f=fun: f(x, y)), (lambda y, x, r=ref: r(x, y)), shapes[::-1]
  exact = np.dtype(dtype).kind in "iub"
  tol = 5e-2 if np.dtype(dtype) == _bf16 else (None if exact else 1e-4)
  return OpRecord(name, "conv_general_dilated", fun,
                  args_of(*(rand(s, dtype, -2.0, 2.0) for s in shapes)), ref, rtol=tol, atol=tol,
                  linear=not exact, grad_order=0 if exact or dtype == _bf16 else 2)


RECORDS = [
    _conv("conv_nchw_valid_f32", (2, 3, 5, 5), (4, 3, 3, 3), (1, 1), "VALID"),
    _conv("conv_nhwc_same_stride2_f32", (1, 5, 5, 2), (3, 3, 2, 3), (2, 2), "SAME",
          dimension_numbers=("NHWC", "HWIO", "NHWC")),
    _conv("conv_pairs_dilations_f32", (1, 2, 5, 4), (2, 2, 2, 3), (1, 2), [(1, 2), (0, 1)],
          lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    _conv("conv_rhs_pairs_stride_dilation_f32", (1, 2, 5, 4), (2, 2, 2, 3), (2, 1),
          [(1, 2), (0, 1)], swap=True, rhs_dilation=(2, 1)),
    _conv("conv_feature_groups_f32", (2, 4, 4, 4), (4, 2, 3, 3), (1, 1), "SAME",
          feature_group_count=2),
    _conv("conv_rhs_feature_groups_stride_f32", (1, 4, 5, 4), (4, 2, 2, 2), (2, 1), "SAME",
          swap=True, feature_group_count=2),
    _conv("conv_depthwise_nhwc_f32", (1, 4, 4, 3), (3, 3, 1, 6), (1, 1), "SAME",
          dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3),
    _conv("conv_batch_groups_f32", (4, 2, 4, 4), (4, 2, 3, 3), (1, 1), "VALID",
          batch_group_count=2),
    _conv("conv_rhs_batch_groups_stride_f32", (4, 2, 5, 4), (4, 2, 2, 2), (2, 1),
          [(0, 1), (1, 0)], swap=True, batch_group_count=2),
    _conv("conv_1d_same_lower_f32", (2, 3, 6), (2, 3, 3), (2,), "SAME_LOWER"),
    _conv("conv_3d_negative_pad_f32", (1, 2, 4, 3, 4), (2, 2, 2, 2, 2), (1, 2, 1),
          [(1, 0), (0, 1), (-1, 1)], rhs_dilation=(1, 1, 2)),
    _conv("conv_mixed_layouts_f32", (3, 1, 4, 3), (2, 2, 1, 3), (1, 2), "SAME",
          dimension_numbers=("HNWC", "OHWI", "NCWH")),
    _conv("conv_index_triple_dnums_f32", (1, 4, 4, 2), (2, 2, 2, 3), (1, 1), "VALID",
          dimension_numbers=((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))),
    _conv("conv_i32", (2, 3, 4, 4), (2, 3, 2, 2), (1, 1), "SAME", np.int32),
    _conv("conv_preferred_i32_from_i8", (1, 2, 4, 4), (2, 2, 2, 2), (1, 1), "VALID", np.int8,
          preferred_element_type=np.int32),
    _conv("conv_bf16", (1, 2, 4, 4), (2, 2, 3, 3), (1, 1), "SAME", _bf16),
    OpRecord("conv_with_general_padding_f32", "conv_general_dilated",
             lambda x, y: lax.conv_with_general_padding(x, y, (1, 1), [(1, 0), (0, 2)], (1, 2),
                                                        None),
             args_of(rand((1, 2, 4, 4), low=-2, high=2), rand((3, 2, 2, 2), low=-2, high=2)),
             lambda x, y: reference(x, y, (1, 1), [(1, 0), (0, 2)], lhs_dilation=(1, 2)),
             rtol=1e-4, atol=1e-4, linear=True),
    OpRecord("conv_transpose_same_stride2_f32", "conv_general_dilated",
             lambda x, y: lax.conv_transpose(x, y, (2, 2), "SAME"),
             args_of(rand((1, 3, 3, 2), low=-2, high=2), rand((3, 3, 2, 2), low=-2, high=2)),
             # SAME with kernel 3, stride 2: pads (2, 1) around the 2-dilated input (jax's rule)
             lambda x, y: reference(x, y, (1, 1), [(2, 1), (2, 1)], lhs_dilation=(2, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC")),
             rtol=1e-4, atol=1e-4, linear=True),
]
