"""Binary elementwise primitives: arithmetic, bitwise logic and shifts.

Operands have one dtype (a Python scalar adopts the other operand's dtype, weakly typed) and
broadcast NumPy-style. Each primitive is one block: wrapper, rules, registration.

The NumPy implementations reproduce what XLA computes where C leaves things undefined: integer
division rounds toward zero and a division by zero gives -1 (all bits set; the maximum for
unsigned types), `rem` takes the sign of the dividend and `x rem 0` is x, shifts by a negative
amount or by at least the bit width give 0 (sign fill for the arithmetic right shift).
"""
from __future__ import annotations

import functools

import numpy as np

from revax._src.core import dtypes
from revax._src.core.avals import ShapedArray, get_aval
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax.standard import (binary_operands, broadcast_shapes, broadcast_tangent,
                                     broadcast_to_out, check_dtype, defbroadcasting, hlo_lowering,
                                     naryop, same_dtypes, unbroadcast)


__all__ = [
  "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "complex",
  "bitwise_and", "bitwise_or", "bitwise_xor",
  "shift_left", "shift_right_logical", "shift_right_arithmetic",
  "add_p", "sub_p", "mul_p", "div_p", "rem_p", "pow_p", "max_p", "min_p", "atan2_p",
  "nextafter_p", "complex_p", "and_p", "or_p", "xor_p",
  "shift_left_p", "shift_right_logical_p", "shift_right_arithmetic_p",
]


def _quiet(fn):
  """`fn` with NumPy's warnings silenced: XLA gives inf, NaN and wrapped integers quietly."""
  @functools.wraps(fn)
  def wrapped(*args, **params):
    with np.errstate(all="ignore"):
      return fn(*args, **params)
  return wrapped


def _all_ones(dtype):
  """-1 for signed integers, the maximum for unsigned ones: every bit set."""
  return ~np.zeros((), dtype)


def _trunc_div(x, y):
  """C integer division (toward zero) of integer arrays; y must have no zeros."""
  q = np.floor_divide(x, y)
  inexact = (x - q * y) != 0
  if dtypes.is_signed_integer(x.dtype):
    q = np.where(inexact & ((x < 0) != (y < 0)), q + 1, q)
  return q.astype(x.dtype)


def _one_copy(v, shape):
  """`v` (of the broadcast result's shape) cut down to an operand's `shape`: one copy of each
  value the operand was broadcast to (undoing implicit broadcasting)."""
  from revax._src.lax.shapes import reshape  # shapes builds on this module
  from revax._src.lax.slicing import slice as slice_  # noqa: A004
  out_shape = get_aval(v).shape
  if tuple(shape) == out_shape:
    return v
  lead = len(out_shape) - len(shape)
  limits = tuple(1 if d < lead or shape[d - lead] == 1 else n for d, n in enumerate(out_shape))
  return reshape(slice_(v, (0,) * len(out_shape), limits), tuple(shape))


def _definverse_binary(prim, solve_x, solve_y, when=None):
  """`out = prim(x, y)` rebuilds x as `solve_x(out, y)` or y as `solve_y(out, x)` (None: that
  operand cannot be rebuilt), through implicit broadcasting. `when(eqn, facts, unknown_index)`
  may refuse cases the algebra does not cover."""
  def solves(known, eqn, facts):
    for i, solve in enumerate((solve_x, solve_y)):
      if known == tuple(j != i for j in range(2)) and solve is not None:
        empty = eqn.outvars[0].aval.size == 0 and eqn.invars[i].aval.size > 0
        return not empty and (when is None or when(eqn, facts, i))  # empty: holds no copy
    return False

  def rebuild(outs, ins, avals_in, **params):
    (out,), (x, y) = outs, ins
    if x is None:
      return [_one_copy(solve_x(out, y), avals_in[0].shape), y]
    return [x, _one_copy(solve_y(out, x), avals_in[1].shape)]

  inv.definverse(prim, rebuild, solves)


def _real_part(z):
  from revax._src.lax.unary import real  # unary builds on this module
  return real(z)


def _imag_part(z):
  from revax._src.lax.unary import imag
  return imag(z)


# --- add -----------------------------------------------------------------------------------------
def add(x, y):
  """Elementwise addition: x + y."""
  return add_p.bind(*binary_operands(x, y))


def _add_jvp(primals, tangents):
  x, y = primals
  out = add_p.bind(x, y)
  tx, ty = tangents
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  if type(ty) is ad.Zero:
    return out, broadcast_tangent(tx, get_aval(out).shape)
  if type(tx) is ad.Zero:
    return out, broadcast_tangent(ty, get_aval(out).shape)
  return out, add_p.bind(tx, ty)


def _add_transpose(ct, x, y):
  return [_linear_ct(ct, x), _linear_ct(ct, y)]


def _linear_ct(ct, x):
  """The cotangent of operand `x` of a broadcasting op linear in it with coefficient 1, or
  None if `x` is not a linear input."""
  if not ad.is_undefined_primal(x):
    return None
  return ad.Zero(x.aval) if type(ct) is ad.Zero else unbroadcast(ct, x.aval)


add_p = naryop("add", ("num", "num"), _quiet(np.add), "stablehlo.add")
ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_transposes[add_p] = _add_transpose
_definverse_binary(add_p, lambda out, y: sub(out, y), lambda out, x: sub(out, x))


# --- sub -----------------------------------------------------------------------------------------
def sub(x, y):
  """Elementwise subtraction: x - y."""
  return sub_p.bind(*binary_operands(x, y))


def _sub_jvp(primals, tangents):
  from revax._src.lax.unary import neg  # unary imports this module
  x, y = primals
  out = sub_p.bind(x, y)
  tx, ty = tangents
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  if type(ty) is ad.Zero:
    return out, broadcast_tangent(tx, get_aval(out).shape)
  if type(tx) is ad.Zero:
    return out, neg(broadcast_tangent(ty, get_aval(out).shape))
  return out, sub_p.bind(tx, ty)


def _sub_transpose(ct, x, y):
  from revax._src.lax.unary import neg  # unary imports this module
  minus_ct = ct if type(ct) is ad.Zero or not ad.is_undefined_primal(y) else neg(ct)
  return [_linear_ct(ct, x), _linear_ct(minus_ct, y)]


sub_p = naryop("sub", ("num", "num"), _quiet(np.subtract), "stablehlo.subtract")
ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[sub_p] = _sub_transpose
_definverse_binary(sub_p, lambda out, y: add(out, y), lambda out, x: sub(x, out))


# --- mul -----------------------------------------------------------------------------------------
def mul(x, y):
  """Elementwise multiplication: x * y."""
  return mul_p.bind(*binary_operands(x, y))


def _mul_transpose_lhs(ct, x, y):
  return unbroadcast(mul_p.bind(ct, y), x.aval)


def _mul_transpose_rhs(ct, x, y):
  return unbroadcast(mul_p.bind(x, ct), y.aval)


mul_p = naryop("mul", ("num", "num"), _quiet(np.multiply), "stablehlo.multiply")
ad.defbilinear(mul_p, _mul_transpose_lhs, _mul_transpose_rhs)
# by a known factor; never by one known to hold a zero (the product has lost the operand there,
# and dividing would give NaN gradients): the planner then rebuilds the operand otherwise or
# stores it
_definverse_binary(mul_p, lambda out, y: div(out, y), lambda out, x: div(out, x),
                   when=lambda eqn, facts, i: (dtypes.is_inexact(eqn.outvars[0].aval.dtype)
                                               and not facts.may_be_zero(eqn.invars[1 - i])))


# --- div -----------------------------------------------------------------------------------------
def div(x, y):
  """Elementwise division: x / y. Integer division rounds toward zero (-7 / 2 == -3), and an
  integer division by zero gives -1 (all bits set), as in XLA."""
  return div_p.bind(*binary_operands(x, y))


@_quiet
def _div_numpy(x, y):
  if not dtypes.is_integer(x.dtype):
    return np.true_divide(x, y)
  x, y = np.broadcast_arrays(x, y)
  zero = y == 0
  q = _trunc_div(x, np.where(zero, 1, y).astype(y.dtype))
  return np.where(zero, _all_ones(x.dtype), q)


def _div_jvp_x(t, x, y):
  return div(t, y)


def _div_jvp_y(t, x, y):
  from revax._src.lax.unary import integer_pow, neg  # unary imports this module
  return mul(mul(neg(t), x), integer_pow(y, -2))


def _div_transpose(ct, x, y):
  if ad.is_undefined_primal(y):
    raise ValueError("div is linear in its dividend only; its divisor must be known")
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval), None]
  return [unbroadcast(div_p.bind(ct, y), x.aval), None]


div_p = naryop("div", ("num", "num"), _div_numpy, "stablehlo.divide")
ad.defjvp(div_p, _div_jvp_x, _div_jvp_y)
ad.primitive_transposes[div_p] = _div_transpose
# x = out * y is singular where y is zero (out is inf or NaN there), y = x / out where x is
_definverse_binary(div_p, lambda out, y: mul(out, y), lambda out, x: div(x, out),
                   when=lambda eqn, facts, i: (dtypes.is_inexact(eqn.outvars[0].aval.dtype)
                                               and not facts.may_be_zero(eqn.invars[1 - i])))


# --- rem -----------------------------------------------------------------------------------------
def rem(x, y):
  """Elementwise remainder of C's truncated division: the sign of x (-7 rem 2 == -1).

  `x rem 0` is x for integers and NaN for floats, as in XLA."""
  return rem_p.bind(*binary_operands(x, y))


@_quiet
def _rem_numpy(x, y):
  if not dtypes.is_integer(x.dtype):
    return np.fmod(x, y)
  x, y = np.broadcast_arrays(x, y)
  zero = y == 0
  y1 = np.where(zero, 1, y).astype(y.dtype)
  r = (x - _trunc_div(x, y1) * y1).astype(x.dtype)
  return np.where(zero, x, r)


def _rem_jvp_x(t, x, y):
  return broadcast_tangent(t, _out_shape(x, y))


def _rem_jvp_y(t, x, y):
  """x rem y = x - y trunc(x / y), so d/dy = -trunc(x / y) = -sign(x / y) floor(|x / y|)."""
  from revax._src.lax.unary import abs, floor, neg, sign  # unary imports this module
  q = div(x, y)
  return mul(neg(t), mul(sign(q), floor(abs(q))))


def _out_shape(x, y):
  return broadcast_shapes(get_aval(x).shape, get_aval(y).shape)


rem_p = naryop("rem", ("float_int", "float_int"), _rem_numpy, "stablehlo.remainder")
ad.defjvp(rem_p, _rem_jvp_x, _rem_jvp_y)
inv.not_invertible(rem_p, "many-to-one: x and x + k*y have the same remainder")


# --- pow -----------------------------------------------------------------------------------------
def pow(x, y):
  """Elementwise power x**y of a floating or complex `x`.

  `y` has the dtype of `x`, or any integer dtype (it is converted to the dtype of `x`). For a
  static integer exponent, `integer_pow` is exact and cheaper.
  """
  return pow_p.bind(*binary_operands(x, y))


def _pow_abstract_eval(x, y):
  check_dtype("pow", "inexact", x.dtype)
  if y.dtype != x.dtype and not dtypes.is_integer(y.dtype):
    raise TypeError(f"pow requires an exponent of the dtype of the base ({x.dtype.name}) or of "
                    f"an integer dtype, got {x.dtype.name}, {y.dtype.name}")
  shape = broadcast_shapes(x.shape, y.shape, op_name="pow")
  return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


@_quiet
def _pow_numpy(x, y):
  y = y.astype(x.dtype)
  if y.size == 1 and y.dtype.kind == "f" and y.reshape(()) == 0.5:
    # NumPy computes power(x, 0.5) with a single exponent as sqrt(x), which differs from pow
    # (and from XLA's power) at -inf (NaN, not inf) and -0.0 (-0.0, not 0.0).
    x, y = np.broadcast_arrays(x, y)
    return np.power(x, np.full(x.shape, y.reshape(-1)[0])) if x.size > 1 else \
        np.power(x.reshape(1), np.full((2,), y.reshape(-1)[0]))[0].reshape(x.shape)
  if x.dtype.kind == "c":
    # XLA's complex power is NaN at a zero base with a non-real exponent (NumPy gives 0 where
    # the exponent's real part is positive)
    return np.where((x == 0) & (y.imag != 0), np.array(complex(np.nan, np.nan), x.dtype),
                    np.power(x, y))
  return np.power(x, y)


def _pow_lower(ctx, x, y):
  x_aval, y_aval = ctx.avals_in
  if y_aval.dtype != x_aval.dtype:
    y = ctx.op1("stablehlo.convert", [y], y_aval.update(dtype=x_aval.dtype))
    ctx = mlir.LoweringRuleContext(ctx.fb, [x_aval, y_aval.update(dtype=x_aval.dtype)],
                                   ctx.avals_out, ctx.platform)
  return ctx.op1("stablehlo.power", broadcast_to_out(ctx, [x, y]))


def _pow_jvp_x(t, out, x, y):
  """y x**(y - 1) t; an integer exponent 0 contributes 0 (also at x = 0, where x**-1 is inf)."""
  from revax._src.lax.comparison import eq, select_n  # comparison imports this module
  from revax._src.lax.conversion import convert_element_type
  y_x = convert_element_type(y, get_aval(x).dtype)
  jac = mul(y_x, pow(x, sub(y, 1)))
  if dtypes.is_integer(get_aval(y).dtype):
    shape = get_aval(jac).shape
    zero_exponent = broadcast_tangent(eq(y, 0), shape)
    jac = select_n(zero_exponent, jac, broadcast_tangent(_zeros_like(jac), shape))
  return mul(t, jac)


def _pow_jvp_y(t, out, x, y):
  """log(x) x**y t, with log(x) read as 0 where x = 0 (as JAX does)."""
  from revax._src.lax.comparison import eq, select_n  # comparison imports this module
  from revax._src.lax.creation import full_like
  from revax._src.lax.unary import log
  safe_x = select_n(eq(x, 0), x, full_like(x, 1))
  return mul(t, mul(log(safe_x), out))


def _zeros_like(x):
  from revax._src.lax.creation import full_like  # creation imports shapes, which imports this
  return full_like(x, 0)


pow_p = Primitive("pow")
pow_p.def_abstract_eval(_pow_abstract_eval)
dispatch.def_numpy_impl(pow_p, _pow_numpy)
mlir.register_lowering(pow_p, _pow_lower)
ad.defjvp_from_output(pow_p, _pow_jvp_x, _pow_jvp_y)
inv.not_invertible(pow_p, "many-to-one for even powers and not defined for negative bases")
defbroadcasting(pow_p)


# --- max -----------------------------------------------------------------------------------------
def max(x, y):
  """Elementwise maximum; NaN if either operand is NaN. Complex values compare
  lexicographically (real part first)."""
  return max_p.bind(*binary_operands(x, y))


def _compare(ctx, x, y, direction, aval):
  return ctx.op1("stablehlo.compare", [x, y], aval.update(dtype=dtypes.bool_),
                 props={"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                        "compare_type": "#stablehlo<comparison_type FLOAT>"})


def _complex_minmax_lower(direction):
  """XLA:CPU's maximum/minimum compare complex numbers by their real parts only; order them
  lexicographically (real part, then imaginary part) as NumPy and JAX do."""
  def rule(ctx, x, y):
    x, y = broadcast_to_out(ctx, [x, y])
    aval = ctx.avals_out[0]
    part = aval.update(dtype=np.finfo(aval.dtype).dtype)
    xr, yr = (ctx.op1("stablehlo.real", [v], part) for v in (x, y))
    xi, yi = (ctx.op1("stablehlo.imag", [v], part) for v in (x, y))
    real_wins = _compare(ctx, xr, yr, direction, part)
    real_ties = _compare(ctx, xr, yr, "EQ", part)
    imag_wins = _compare(ctx, xi, yi, direction, part)
    pick_x = ctx.op1("stablehlo.or", [real_wins, ctx.op1("stablehlo.and", [real_ties, imag_wins],
                                                       part.update(dtype=dtypes.bool_))],
                     part.update(dtype=dtypes.bool_))
    return ctx.op1("stablehlo.select", [pick_x, x, y])
  return rule


def _propagate_nans(ctx, x, y, out):
  """`out` where neither operand is NaN, else the NaN. XLA:CPU's default ("fast") min/max
  returns the first operand when the second is NaN (unless the program is compiled with
  --xla_cpu_enable_fast_min_max=false), so NaN propagation is spelled out."""
  aval = ctx.avals_out[0]
  for v in (y, x):
    out = ctx.op1("stablehlo.select", [_compare(ctx, v, v, "NE", aval), v, out])
  return out


def _minmax_lower(hlo_op, direction):
  complex_rule = _complex_minmax_lower(direction)

  def rule(ctx, x, y):
    dtype = ctx.avals_out[0].dtype
    if dtypes.is_complex(dtype):
      return complex_rule(ctx, x, y)
    x, y = broadcast_to_out(ctx, [x, y])
    out = ctx.op1(hlo_op, [x, y])
    return _propagate_nans(ctx, x, y, out) if dtypes.is_float(dtype) else out
  return rule


def _max_jvp_x(t, out, x, y):
  return mul(t, _balanced_eq(x, out, y))


def _max_jvp_y(t, out, x, y):
  return mul(t, _balanced_eq(y, out, x))


def _balanced_eq(x, out, y):
  """1 where `x` is the result and `y` is not, 1/2 where both are (a tie splits the tangent
  between the operands, as in JAX), 0 elsewhere."""
  from revax._src.lax.comparison import eq  # comparison imports this module
  from revax._src.lax.conversion import convert_element_type
  dtype = get_aval(out).dtype
  x_is_out = convert_element_type(eq(x, out), dtype)
  y_is_out = convert_element_type(eq(y, out), dtype)
  return div(x_is_out, add(y_is_out, 1))


max_p = naryop("max", ("any", "any"), _quiet(np.maximum), None)
mlir.register_lowering(max_p, _minmax_lower("stablehlo.maximum", "GT"))
ad.defjvp_from_output(max_p, _max_jvp_x, _max_jvp_y)
inv.not_invertible(max_p, "many-to-one: every x below y gives y")


# --- min -----------------------------------------------------------------------------------------
def min(x, y):
  """Elementwise minimum; NaN if either operand is NaN. Complex values compare
  lexicographically (real part first)."""
  return min_p.bind(*binary_operands(x, y))


def _min_jvp_x(t, out, x, y):
  return mul(t, _balanced_eq(x, out, y))


def _min_jvp_y(t, out, x, y):
  return mul(t, _balanced_eq(y, out, x))


min_p = naryop("min", ("any", "any"), _quiet(np.minimum), None)
mlir.register_lowering(min_p, _minmax_lower("stablehlo.minimum", "LT"))
ad.defjvp_from_output(min_p, _min_jvp_x, _min_jvp_y)
inv.not_invertible(min_p, "many-to-one: every x above y gives y")


# --- atan2 ---------------------------------------------------------------------------------------
def atan2(x, y):
  """Elementwise arctangent of x / y, in the quadrant of the point (y, x)."""
  return atan2_p.bind(*binary_operands(x, y))


def _atan2_jvp_x(t, x, y):
  return mul(t, div(y, _sum_of_squares(x, y)))


def _atan2_jvp_y(t, x, y):
  from revax._src.lax.unary import neg  # unary imports this module
  return mul(t, div(neg(x), _sum_of_squares(x, y)))


def _sum_of_squares(x, y):
  return add(mul(x, x), mul(y, y))


def _atan2_numpy(x, y):
  if not dtypes.is_complex(x.dtype):
    return np.arctan2(x, y)
  # the complex angle, as XLA's complex atan2: -i log((y + i x) / sqrt(x^2 + y^2))
  wx, wy = x.astype(np.complex128), y.astype(np.complex128)
  return (-1j * np.log((wy + 1j * wx) / np.sqrt(wx * wx + wy * wy))).astype(x.dtype)


atan2_p = naryop("atan2", ("inexact", "inexact"), _quiet(_atan2_numpy), "stablehlo.atan2")
ad.defjvp(atan2_p, _atan2_jvp_x, _atan2_jvp_y)
inv.not_invertible(atan2_p, "many-to-one: (x, y) and (k*x, k*y) have the same angle")


# --- nextafter -----------------------------------------------------------------------------------
def nextafter(x1, x2):
  """Elementwise the next floating-point value after x1 in the direction of x2."""
  return nextafter_p.bind(*binary_operands(x1, x2))


nextafter_p = naryop("nextafter", ("float", "float"), np.nextafter, "chlo.next_after")
ad.zero_output_jvp(nextafter_p, "piecewise constant: the floating-point neighbour of x1")
inv.not_invertible(nextafter_p, "many-to-one: a floating-point neighbour has many sources")


# --- complex -------------------------------------------------------------------------------------
def complex(x, y):
  """Elementwise x + 1j * y of float32 (complex64 result) or float64 (complex128) operands."""
  return complex_p.bind(*binary_operands(x, y))


_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def _complex_abstract_eval(x, y):
  for a in (x, y):
    if a.dtype not in _COMPLEX_OF:
      raise TypeError(f"complex does not accept dtype {a.dtype.name}; it takes float32 or "
                      "float64 arguments")
  dtype = same_dtypes("complex", (x, y))
  shape = broadcast_shapes(x.shape, y.shape, op_name="complex")
  return ShapedArray(shape, _COMPLEX_OF[dtype], x.weak_type and y.weak_type)


def _complex_numpy(x, y):
  # set the parts directly: x + 1j * y would turn y = inf into nan + inf j
  x, y = np.broadcast_arrays(x, y)
  out = np.empty(x.shape, _COMPLEX_OF[x.dtype])
  out.real, out.imag = x, y
  return out


def _complex_transpose(ct, x, y):
  """x + iy: x gets the real part of the cotangent, y minus its imaginary part (JAX's
  convention for complex cotangents)."""
  from revax._src.lax.unary import imag, neg, real  # unary imports this module
  zero = type(ct) is ad.Zero
  ct_x = None if not ad.is_undefined_primal(x) else (
      ad.Zero(x.aval) if zero else unbroadcast(real(ct), x.aval))
  ct_y = None if not ad.is_undefined_primal(y) else (
      ad.Zero(y.aval) if zero else unbroadcast(neg(imag(ct)), y.aval))
  return [ct_x, ct_y]


complex_p = Primitive("complex")
complex_p.def_abstract_eval(_complex_abstract_eval)
dispatch.def_numpy_impl(complex_p, _quiet(_complex_numpy))
mlir.register_lowering(complex_p, hlo_lowering("stablehlo.complex"))
ad.deflinear(complex_p, _complex_transpose)
inv.definverse(complex_p, lambda outs, ins, avals_in: [
    _one_copy(_real_part(outs[0]), avals_in[0].shape),
    _one_copy(_imag_part(outs[0]), avals_in[1].shape)],
    lambda known, eqn, facts: eqn.outvars[0].aval.size > 0 or  # an empty result holds no copy
    all(a.aval.size == 0 for a in eqn.invars))
defbroadcasting(complex_p)


# --- and -----------------------------------------------------------------------------------------
def bitwise_and(x, y):
  """Elementwise bitwise AND of integer arrays; logical AND of bool arrays."""
  return and_p.bind(*binary_operands(x, y))


and_p = naryop("and", ("intbool", "intbool"), np.bitwise_and, "stablehlo.and")
ad.not_differentiable(and_p, "integer or bool operands")
inv.not_invertible(and_p, "many-to-one: bits cleared by the other operand are lost")


# --- or ------------------------------------------------------------------------------------------
def bitwise_or(x, y):
  """Elementwise bitwise OR of integer arrays; logical OR of bool arrays."""
  return or_p.bind(*binary_operands(x, y))


or_p = naryop("or", ("intbool", "intbool"), np.bitwise_or, "stablehlo.or")
ad.not_differentiable(or_p, "integer or bool operands")
inv.not_invertible(or_p, "many-to-one: bits set by the other operand are lost")


# --- xor -----------------------------------------------------------------------------------------
def bitwise_xor(x, y):
  """Elementwise bitwise XOR of integer arrays; logical XOR of bool arrays."""
  return xor_p.bind(*binary_operands(x, y))


xor_p = naryop("xor", ("intbool", "intbool"), np.bitwise_xor, "stablehlo.xor")
ad.not_differentiable(xor_p, "integer or bool operands")
_definverse_binary(xor_p, lambda out, y: bitwise_xor(out, y), lambda out, x: bitwise_xor(out, x))


# --- shifts --------------------------------------------------------------------------------------
def _bits(dtype):
  return np.dtype(dtype).itemsize * 8


def _as_unsigned(x):
  return x.view(f"u{x.dtype.itemsize}")


def _as_signed(x):
  return x.view(f"i{x.dtype.itemsize}")


def _shift_amounts(x, y):
  """Broadcast x and y; the shift counts as unsigned (a negative count is a huge one), and
  where they are in range."""
  x, y = np.broadcast_arrays(x, y)
  n = _as_unsigned(y)
  in_range = n < _bits(x.dtype)
  return x, np.where(in_range, n, 0).astype(n.dtype), in_range


# --- shift_left ----------------------------------------------------------------------------------
def shift_left(x, y):
  """Elementwise x << y; 0 where y is negative or at least the bit width."""
  return shift_left_p.bind(*binary_operands(x, y))


def _shift_left_numpy(x, y):
  x, n, in_range = _shift_amounts(x, y)
  shifted = _as_unsigned(x) << n
  return np.where(in_range, shifted, 0).astype(shifted.dtype).view(x.dtype)


shift_left_p = naryop("shift_left", ("int", "int"), _shift_left_numpy, "stablehlo.shift_left")
ad.not_differentiable(shift_left_p, "integer operands")
inv.not_invertible(shift_left_p, "many-to-one: bits shifted out are lost")


# --- shift_right_logical -------------------------------------------------------------------------
def shift_right_logical(x, y):
  """Elementwise x >> y filling with zeros; 0 where y is negative or at least the bit width."""
  return shift_right_logical_p.bind(*binary_operands(x, y))


def _shift_right_logical_numpy(x, y):
  x, n, in_range = _shift_amounts(x, y)
  shifted = _as_unsigned(x) >> n
  return np.where(in_range, shifted, 0).astype(shifted.dtype).view(x.dtype)


shift_right_logical_p = naryop("shift_right_logical", ("int", "int"), _shift_right_logical_numpy,
                               "stablehlo.shift_right_logical")
ad.not_differentiable(shift_right_logical_p, "integer operands")
inv.not_invertible(shift_right_logical_p, "many-to-one: bits shifted out are lost")


# --- shift_right_arithmetic ----------------------------------------------------------------------
def shift_right_arithmetic(x, y):
  """Elementwise x >> y filling with the sign bit (unsigned x is read as signed, as XLA does);
  a shift by a negative amount or at least the bit width leaves only sign bits."""
  return shift_right_arithmetic_p.bind(*binary_operands(x, y))


def _shift_right_arithmetic_numpy(x, y):
  x, n, in_range = _shift_amounts(x, y)
  n = np.where(in_range, n, _bits(x.dtype) - 1).astype(n.dtype)
  shifted = _as_signed(x) >> n.view(f"i{n.dtype.itemsize}")
  return np.asarray(shifted).view(x.dtype)


shift_right_arithmetic_p = naryop("shift_right_arithmetic", ("int", "int"),
                                  _shift_right_arithmetic_numpy, "stablehlo.shift_right_arithmetic")
ad.not_differentiable(shift_right_arithmetic_p, "integer operands")
inv.not_invertible(shift_right_arithmetic_p, "many-to-one: bits shifted out are lost")

