"""Op records for comparisons (eq ne lt le gt ge), select_n and clamp."""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand, rank_broadcasting

_bf16 = ml_dtypes.bfloat16
_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, np.nan, 2.5, 0.0])


def _special_pair(dtype):
  """Operands holding NaN, infinities and signed zeros, so every comparison meets them."""
  def make(rng):
    x = _SPECIAL.astype(dtype)
    return x, np.roll(x, 3)
  return make


def _ints_with_ties(shape, dtype, low=-3, high=3):
  """Small integers, so equal pairs are common."""
  return lambda rng: tuple(rand(shape, dtype, low, high)(rng) for _ in range(2))


_CMPS = [("eq", lax.eq, np.equal), ("ne", lax.ne, np.not_equal), ("lt", lax.lt, np.less),
         ("le", lax.le, np.less_equal), ("gt", lax.gt, np.greater),
         ("ge", lax.ge, np.greater_equal)]


def _comparison_records():
  records = []
  for name, fun, ref in _CMPS:
    r = lambda *a, **k: OpRecord(*a, grad_order=0, **k)
    records += [
        r(f"{name}_f32", name, fun, args_of(rand((3, 4)), rand((3, 4))), ref),
        r(f"{name}_f32_nan_inf", name, fun, _special_pair(np.float32), ref),
        r(f"{name}_bf16_nan_inf", name, fun, _special_pair(_bf16), ref),
        r(f"{name}_f16", name, fun, args_of(rand((5,), np.float16), rand((5,), np.float16)), ref),
        r(f"{name}_i32", name, fun, _ints_with_ties((4, 3), np.int32), ref),
        r(f"{name}_i8", name, fun, _ints_with_ties((7,), np.int8, -128, 127), ref),
        r(f"{name}_u32", name, fun, _ints_with_ties((6,), np.uint32, 0, 2**32 - 1), ref),
        r(f"{name}_u8", name, fun, _ints_with_ties((6,), np.uint8, 0, 4), ref),
        r(f"{name}_bool", name, fun, _ints_with_ties((8,), np.bool_), ref),
        r(f"{name}_f32_0d", name, fun, args_of(rand(()), rand(())), ref),
        r(f"{name}_f32_zero_size", name, fun, args_of(rand((0, 3)), rand((0, 3))), ref),
        r(f"{name}_f32_broadcast", name, rank_broadcasting(fun), args_of(rand((2, 3)),
                                                                          rand((3,))), ref),
        r(f"{name}_f32_python_scalar", name, lambda x, f=fun: f(x, 0.5), args_of(rand((4,))),
          lambda x, rf=ref: rf(x, np.float32(0.5))),
        r(f"{name}_i32_python_scalar_left", name, lambda x, f=fun: f(1, x),
          args_of(rand((5,), np.int32)), lambda x, rf=ref: rf(np.int32(1), x)),
    ]
    if name in ("eq", "ne"):
      records += [
          r(f"{name}_c64", name, fun, _complex_ties, ref),
          r(f"{name}_c64_nan", name, fun, _special_pair(np.complex64), ref),
      ]
  return records


def _complex_ties(rng):
  x = rand((6,), np.complex64, -1, 2)(rng)
  y = x.copy()
  y[::2] += np.complex64(1j)  # half the pairs differ in the imaginary part only
  return x, y


# --- select_n ------------------------------------------------------------------------------------
def _np_select(which, *cases):
  if which.dtype == np.bool_:
    return np.where(which, cases[1], cases[0])
  stacked = np.stack(np.broadcast_arrays(*cases))
  idx = np.broadcast_to(np.clip(which.astype(np.int64), 0, len(cases) - 1), cases[0].shape)
  return np.take_along_axis(stacked, idx[None], 0)[0]


def _select_args(which, n, shape, dtype=np.float32):
  small = np.dtype(dtype) == _bf16  # bfloat16 in [-1, 1]: accurate finite differences
  return args_of(which, *(rand(shape, dtype, *((-1, 1) if small else ())) for _ in range(n)))


def _int_which(shape, n, dtype=np.int32):
  return rand(shape, dtype, 0, n - 1)


_SELF_WHICH = np.array([[1, 0, 2], [2, 2, 1]], np.int32)


def _fixed_which(which, n, shape, dtype=np.float32):
  """A record function of the cases only, `which` fixed (drawn once from `which(rng)`)."""
  w = which(np.random.default_rng(7))
  return (lambda *cases: lax.select_n(w, *cases),
          args_of(*(rand(shape, dtype) for _ in range(n))),
          lambda *cases: _np_select(w, *cases))


# Records taking `which` as an argument check first derivatives only (grad_order=1): the second
# order check differentiates a VJP whose outputs include `which`'s float0 cotangent, which
# check_grads' finite differences cannot take. The `fixed_which` records check order 2. The
# many-case records skip the vmap suite (it would run 3^8 axis combinations); test_comparison.py
# vmaps them over a few combinations instead.
_SELECT = [
    OpRecord("select_n_bool_2_f32", "select_n", lax.select_n,
             _select_args(rand((3, 4), np.bool_), 2, (3, 4)), _np_select, grad_order=1),
    OpRecord("select_n_bool_scalar_2_f32", "select_n", lax.select_n,
             _select_args(rand((), np.bool_), 2, (3, 4)), _np_select, grad_order=1),
    OpRecord("select_n_i32_2_f32", "select_n", lax.select_n,
             _select_args(_int_which((2, 5), 2), 2, (2, 5)), _np_select, grad_order=1),
    OpRecord("select_n_i32_3_f32", "select_n", lax.select_n,
             _select_args(_int_which((4, 3), 3), 3, (4, 3)), _np_select, grad_order=1),
    OpRecord("select_n_i32_5_bf16", "select_n", lax.select_n,
             _select_args(_int_which((20,), 5), 5, (20,), _bf16), _np_select, grad_order=1,
             vmap=False),
    OpRecord("select_n_i32_scalar_4_i32", "select_n", lax.select_n,
             _select_args(_int_which((), 4), 4, (3,), np.int32), _np_select, grad_order=0),
    OpRecord("select_n_u8_3_f32", "select_n", lax.select_n,
             _select_args(_int_which((9,), 3, np.uint8), 3, (9,)), _np_select, grad_order=1),
    OpRecord("select_n_i8_7_f32", "select_n", lax.select_n,
             _select_args(_int_which((30,), 7, np.int8), 7, (30,)), _np_select, grad_order=1,
             vmap=False),
    OpRecord("select_n_bool_2_bool", "select_n", lax.select_n,
             _select_args(rand((6,), np.bool_), 2, (6,), np.bool_), _np_select, grad_order=0),
    OpRecord("select_n_one_case_f32", "select_n", lambda w, x: lax.select_n(w, x),
             _select_args(rand((3,), np.bool_), 1, (3,)), lambda w, x: x, grad_order=1),
    OpRecord("select_n_0d_f32", "select_n", lax.select_n,
             _select_args(rand((), np.bool_), 2, ()), _np_select, grad_order=1),
    OpRecord("select_n_zero_size_f32", "select_n", lax.select_n,
             _select_args(_int_which((0, 2), 3), 3, (0, 2)), _np_select, grad_order=1),
    OpRecord("select_n_bool_2_f32_fixed_which", "select_n",
             *_fixed_which(rand((3, 4), np.bool_), 2, (3, 4))),
    OpRecord("select_n_bool_scalar_2_f32_fixed_which", "select_n",
             *_fixed_which(rand((), np.bool_), 2, (2, 3))),
    OpRecord("select_n_i32_4_f32_fixed_which", "select_n",
             *_fixed_which(_int_which((5,), 4), 4, (5,))),
    OpRecord("select_n_i32_3_self_f32", "select_n",  # linear: every case is a function of x
             lambda x: lax.select_n(_SELF_WHICH, x, lax.rev(x, (1,)), x), args_of(rand((2, 3))),
             lambda x: np.where(_SELF_WHICH == 1, x[:, ::-1], x), linear=True),
    OpRecord("select_n_i32_3_case_used_twice_f32", "select_n",
             lambda x, y: lax.select_n(np.array([0, 1, 0, 1, 1], np.int32), x, y, x),
             args_of(rand((5,)), rand((5,))),
             lambda x, y: np.where(np.array([0, 1, 0, 1, 1]) == 1, y, x)),
]


# --- clamp ---------------------------------------------------------------------------------------
def _np_clamp(lo, x, hi):
  return np.minimum(np.maximum(x, lo), hi)


def _clamp_nan_inf(rng):
  x = np.array([np.nan, -5.0, 0.5, 5.0, np.inf, -np.inf, 0.0, 0.5], np.float32)
  lo = np.array([-1, -1, np.nan, -1, -1, -1, -1, -1], np.float32)
  hi = np.array([1, 1, 1, 1, 1, 1, np.nan, np.inf], np.float32)
  return lo, x, hi


def _clamp_complex(rng):
  x = np.array([2 + 1j, -1 + 5j, 0.5 - 3j, 1 - 1j, 1 + 1j, 0 - 1j, 0 + 1j], np.complex64)
  return np.complex64(0), x, np.complex64(1)


def _clamp_complex_no_ties(rng):
  """Real parts away from the bounds', so the lexicographic order is locally constant."""
  x = np.array([2 + 1j, -1 + 5j, 0.5 - 3j, 0.25 + 1j, 1.5 - 2j], np.complex64)
  lo = np.array([0 + 2j, 0 - 1j, 0 + 0j, -1 + 0j, 0 + 0j], np.complex64)
  hi = np.array([1 + 0j, 1 + 0j, 1 + 3j, 1 - 1j, 3 + 0j], np.complex64)
  return lo, x, hi


def _const_args(*values):
  return lambda rng: values


_CLAMP = [
    OpRecord("clamp_scalar_bounds_f32", "clamp", lambda x: lax.clamp(-1.0, x, 1.0),
             args_of(rand((3, 4))), lambda x: np.clip(x, -1, 1).astype(np.float32)),
    OpRecord("clamp_array_bounds_f32", "clamp", lax.clamp,
             args_of(rand((5,), low=-3, high=0), rand((5,)), rand((5,), low=0, high=3)), _np_clamp),
    OpRecord("clamp_mixed_bounds_f32", "clamp", lax.clamp,
             args_of(rand((), low=-1, high=0), rand((2, 3)), rand((2, 3), low=0, high=1)),
             _np_clamp),
    # NaNs and exact ties with the bounds: values only, no derivative there
    OpRecord("clamp_nan_inf_f32", "clamp", lax.clamp, _clamp_nan_inf, _np_clamp, grad_order=0),
    OpRecord("clamp_nan_scalar_bounds_f32", "clamp", lambda x: lax.clamp(-1.0, x, 1.0),
             lambda rng: (np.array([np.nan, 3.0, -3.0], np.float32),),
             lambda x: np.array([np.nan, 1.0, -1.0], np.float32), grad_order=0),
    OpRecord("clamp_c64_lexicographic", "clamp", lax.clamp, _clamp_complex, _np_clamp,
             grad_order=0),
    OpRecord("clamp_c64_no_ties", "clamp", lax.clamp, _clamp_complex_no_ties, _np_clamp),
    OpRecord("clamp_crossed_bounds_f32", "clamp", lax.clamp,
             args_of(rand((4,), low=1, high=2), rand((4,)), rand((4,), low=-2, high=-1)),
             _np_clamp),
    OpRecord("clamp_i32", "clamp", lambda x: lax.clamp(-2, x, 2), args_of(rand((7,), np.int32)),
             lambda x: np.clip(x, -2, 2), grad_order=0),
    OpRecord("clamp_u8", "clamp", lax.clamp,
             args_of(rand((), np.uint8, 2, 5), rand((8,), np.uint8, 0, 10), rand((), np.uint8, 6, 8)),
             _np_clamp, grad_order=0),
    # bounds of the operand's dtype: jax.lax.clamp refuses float32 Python scalars with bfloat16
    OpRecord("clamp_bf16", "clamp", lambda x: lax.clamp(_bf16(-0.5), x, _bf16(0.5)),  # no kinks
             _const_args(np.array([-1.5, -0.125, 0.0, 0.25, 1.25, -2.0], _bf16)),
             lambda x: _np_clamp(_bf16(-0.5), x, _bf16(0.5))),
    OpRecord("clamp_bool", "clamp", lambda x: lax.clamp(False, x, True),
             args_of(rand((4,), np.bool_)), lambda x: x, grad_order=0),
    OpRecord("clamp_0d_f32", "clamp", lax.clamp, args_of(rand(()), rand(()), rand(())),
             _np_clamp),
    OpRecord("clamp_zero_size_f32", "clamp", lambda x: lax.clamp(0.0, x, 1.0),
             args_of(rand((2, 0))), lambda x: np.clip(x, 0, 1).astype(np.float32)),
]

RECORDS = _comparison_records() + _SELECT + _CLAMP
