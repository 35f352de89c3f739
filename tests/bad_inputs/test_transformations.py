"""Bad inputs to the transformations: jit (and its compiled objects), grad/value_and_grad, vjp,
jvp, linearize, jacfwd/jacrev/hessian, vmap, make_jaxpr, eval_shape, checkpoint, custom_jvp,
custom_vjp, invertible and custom_ivjp."""
import numpy as np
import pytest

from tests.bad_inputs.cases import case, check

x3 = np.arange(3, dtype=np.float32)
i3 = np.arange(3, dtype=np.int32)
f4 = np.ones(4, np.float32)
FLOAT0 = np.dtype([("float0", "V")])
_XLA_ABORTS = "JAX hands the program to XLA, which aborts the process"
_LAZY = "JAX accepts a non-callable here and fails only when it is called"


def _cj(a, rule):
  f = a.top.custom_jvp(lambda x: a.np.sin(x))
  f.defjvp(rule)
  return a.top.jvp(f, (x3,), (x3,))


def _cv(a, fwd, bwd):
  f = a.top.custom_vjp(lambda x: a.np.sin(x))
  f.defvjp(fwd, bwd)
  return a.top.grad(lambda x: f(x).sum())(x3)


def _defjvps_two_rules(a):
  f = a.top.custom_jvp(lambda x: x * 2)
  f.defjvps(lambda g, ans, x: g * 2, lambda g, ans, x: g)
  return a.top.jvp(f, (x3,), (x3,))


def _jvp_of_custom_vjp(a):
  f = a.top.custom_vjp(lambda x: x * 2)
  f.defvjp(lambda x: (f(x), None), lambda r, g: (g * 2,))
  return a.top.jvp(f, (x3,), (x3,))


def _ivjp(a, rule):
  block = a.top.custom_ivjp(lambda x: x * 2)
  block.defivjp(rule)
  return a.top.grad(lambda x: a.top.invertible(block)(x).sum())(x3)


CASES = [
    # --- jit ---------------------------------------------------------------------------------
    case("jit/not_callable", "non-callable", lambda a: a.top.jit(3), TypeError,
         "expects a callable, got 3"),
    case("jit/unhashable_static_argnums", "static",
         lambda a: a.top.jit(lambda x, n: x * len(n), static_argnums=1)(x3, [1, 2]), ValueError,
         "Non-hashable static arguments are not supported"),
    case("jit/unhashable_static_argnames", "static",
         lambda a: a.top.jit(lambda x, n: x * len(n), static_argnames="n")(x3, n=[1, 2]),
         ValueError, "Non-hashable static arguments are not supported"),
    case("jit/static_argnums_out_of_range", "axis",
         lambda a: a.top.jit(lambda x: x, static_argnums=3), ValueError,
         "Jitted function has static_argnums=(3,), but only accepts 1 positional arguments"),
    case("jit/string_argument", "non-array", lambda a: a.top.jit(lambda x: x)("abc"), TypeError,
         "of type str is not a valid revax type"),
    case("jit/object_argument", "non-array", lambda a: a.top.jit(lambda x: x)(object()),
         TypeError, "of type object is not a valid revax type"),
    case("jit/object_array_argument", "dtype",
         lambda a: a.top.jit(lambda x: x)(np.array([1, "a"], dtype=object)), TypeError,
         "does not support dtype object"),
    case("jit/string_output", "callback", lambda a: a.top.jit(lambda x: "abc")(x3), TypeError,
         "returned a value of type str"),
    case("jit/object_in_output_list", "callback",
         lambda a: a.top.jit(lambda x: [x, object()])(x3), TypeError,
         "returned a value of type object"),
    case("jit/too_few_arguments", "arity", lambda a: a.top.jit(lambda x, y: x + y)(x3),
         TypeError, "missing 1 required positional argument: 'y'"),
    case("jit/too_many_arguments", "arity", lambda a: a.top.jit(lambda x: x)(x3, x3),
         TypeError, "takes 1 positional argument but 2 were given"),
    case("jit/bool_of_tracer", "traced",
         lambda a: a.top.jit(lambda x: x if x.sum() > 0 else -x)(x3), TypeError,
         "Attempted bool() conversion"),
    case("jit/int_of_tracer", "traced", lambda a: a.top.jit(lambda x: x * int(x[0]))(x3),
         TypeError, "Attempted int() conversion"),
    case("jit/index_with_tracer", "traced",
         lambda a: a.top.jit(lambda x: [1, 2, 3][x[0].astype(int)])(x3), TypeError,
         "Attempted use as an index (__index__)"),
    case("jit/numpy_of_tracer", "traced", lambda a: a.top.jit(lambda x: np.asarray(x))(x3),
         TypeError, "__array__() was called on a traced array"),
    case("jit/compiled_wrong_shape", "rank",
         lambda a: a.top.jit(lambda x: x * 2).lower(x3).compile()(f4), TypeError,
         "compiled for argument types (f32[3]) but received (f32[4])"),
    case("jit/compiled_wrong_dtype", "dtype",
         lambda a: a.top.jit(lambda x: x * 2).lower(x3).compile()(i3), TypeError,
         "compiled for argument types (f32[3]) but received (i32[3])"),
    case("jit/compiled_wrong_pytree", "pytree",
         lambda a: a.top.jit(lambda x: x * 2).lower(x3).compile()((x3, x3)), TypeError,
         "was compiled for arguments of structure"),
    case("jit/python_int_overflow", "size", lambda a: a.top.jit(lambda x: x)(2 ** 40),
         OverflowError, "1099511627776 out of bounds for int32"),
    case("jit/huge_iota", "size", lambda a: a.top.jit(lambda: a.lax.iota(np.int32, 2 ** 62))(),
         ValueError, "i32[4611686018427387904] is too large for XLA", jax=_XLA_ABORTS),
    case("jit/huge_zeros", "size", lambda a: a.top.jit(lambda: a.np.zeros((2 ** 40, 2 ** 40)))(),
         ValueError, "is too large for XLA", jax=_XLA_ABORTS),
    case("jit/huge_broadcast", "size",
         lambda a: a.top.jit(lambda x: a.np.broadcast_to(x, (2 ** 31, 2 ** 31)).sum())(
             np.float32(1)), ValueError, "f32[2147483648,2147483648] is too large for XLA",
         jax=_XLA_ABORTS),
    case("jit/huge_intermediate_of_grad", "size",
         lambda a: a.top.jit(a.top.grad(lambda x: a.np.broadcast_to(x, (2 ** 31, 2 ** 31)).sum()))(
             np.float32(1)), ValueError, "is too large for XLA", jax=_XLA_ABORTS),
    # --- grad / value_and_grad -----------------------------------------------------------------
    case("grad/not_callable", "non-callable", lambda a: a.top.grad(3), TypeError,
         "expects a callable, got 3"),
    case("grad/nonscalar_output", "rank", lambda a: a.top.grad(lambda x: x * 2)(x3), TypeError,
         "Gradient only defined for scalar-output functions. Output had shape: (3,)"),
    case("grad/tuple_output", "pytree", lambda a: a.top.grad(lambda x: (x.sum(), x.sum()))(x3),
         TypeError, "Gradient only defined for scalar-output functions"),
    case("grad/int_input", "dtype", lambda a: a.top.grad(lambda x: (x * 2).sum())(i3),
         TypeError, "grad requires real- or complex-valued inputs"),
    case("grad/bool_input", "dtype", lambda a: a.top.grad(lambda x: x.sum())(np.array([True])),
         TypeError, "but got bool"),
    case("grad/int_output", "dtype", lambda a: a.top.grad(lambda x: (x > 0).sum())(x3),
         TypeError, "but got int32"),
    case("grad/complex_output", "dtype", lambda a: a.top.grad(lambda x: (x * 1j).sum())(x3),
         TypeError, "For holomorphic differentiation, pass holomorphic=True"),
    case("grad/argnums_out_of_range", "axis",
         lambda a: a.top.grad(lambda x, y: (x * y).sum(), argnums=2)(x3, x3), TypeError,
         "argnums=2 requires at least 3 positional arguments"),
    case("grad/argnums_negative_out_of_range", "axis",
         lambda a: a.top.grad(lambda x: x.sum(), argnums=-2)(x3), ValueError,
         "but got value -2 for len(args) == 1"),
    case("grad/argnums_float", "static", lambda a: a.top.grad(lambda x: x.sum(), argnums=0.5)(x3),
         TypeError, "argnums must be an int or a tuple of ints, got 0.5"),
    case("grad/has_aux_not_a_pair", "callback",
         lambda a: a.top.grad(lambda x: x.sum(), has_aux=True)(x3), TypeError,
         "has_aux=True must return a pair"),
    case("grad/string_argument", "non-array", lambda a: a.top.grad(lambda x: 1.0)("abc"),
         TypeError, "of type str is not a valid revax type"),
    case("value_and_grad/nonscalar_output", "rank",
         lambda a: a.top.value_and_grad(lambda x: x)(x3), TypeError,
         "Gradient only defined for scalar-output functions"),
    # --- vjp -------------------------------------------------------------------------------------
    case("vjp/not_callable", "non-callable", lambda a: a.top.vjp(3, x3), TypeError,
         "expects a callable, got 3"),
    case("vjp/cotangent_shape", "rank", lambda a: a.top.vjp(lambda x: x * 2, x3)[1](f4),
         ValueError, "cotangent input f32[4] does not match the primal output f32[3]"),
    case("vjp/cotangent_dtype", "dtype", lambda a: a.top.vjp(lambda x: x * 2, x3)[1](i3),
         ValueError, "cotangent input i32[3] does not match the primal output f32[3]"),
    case("vjp/cotangent_pytree", "pytree", lambda a: a.top.vjp(lambda x: x * 2, x3)[1]((x3, x3)),
         ValueError, "unexpected tree structure"),
    case("vjp/pullback_two_arguments", "arity",
         lambda a: a.top.vjp(lambda x: x * 2, x3)[1](x3, x3), TypeError,
         "applied to <lambda> was called with 2 arguments,\nbut functions returned by `jax.vjp` "
         "must be called with a single argument"),
    case("vjp/string_primal", "non-array", lambda a: a.top.vjp(lambda x: x, "abc"), TypeError,
         "of type str is not a valid revax type"),
    # --- jvp ---------------------------------------------------------------------------------
    case("jvp/not_callable", "non-callable", lambda a: a.top.jvp(3, (x3,), (x3,)), TypeError,
         "expects a callable, got 3"),
    case("jvp/primals_not_a_tuple", "pytree", lambda a: a.top.jvp(lambda x: x, x3, (x3,)),
         TypeError, "must be tuples or lists; found ndarray and tuple"),
    case("jvp/tangent_pytree", "pytree", lambda a: a.top.jvp(lambda x: x, (x3,), ((x3, x3),)),
         TypeError, "must have the same tree structure"),
    case("jvp/tangent_count", "arity", lambda a: a.top.jvp(lambda x: x, (x3,), (x3, x3)),
         TypeError, "must have the same tree structure"),
    case("jvp/tangent_shape", "rank", lambda a: a.top.jvp(lambda x: x, (x3,), (f4,)), ValueError,
         "different primal and tangent shapes; got primal shape (3,) and tangent shape as (4,)"),
    case("jvp/tangent_dtype", "dtype",
         lambda a: a.top.jvp(lambda x: x, (x3,), (np.ones(3, np.float16),)), TypeError,
         "expected tangent dtype float32, but got tangent dtype float16"),
    case("jvp/int_primal_float_tangent", "dtype", lambda a: a.top.jvp(lambda x: x, (i3,), (x3,)),
         TypeError, "the tangent dtype must be float0"),
    case("jvp/string_primal", "non-array", lambda a: a.top.jvp(lambda x: x, ("a",), ("a",)),
         TypeError, "of type str is not a valid revax type"),
    # --- linearize, jacobians ------------------------------------------------------------------
    case("linearize/not_callable", "non-callable", lambda a: a.top.linearize(3, x3), TypeError,
         "expects a callable, got 3"),
    case("linearize/tangent_shape", "rank",
         lambda a: a.top.linearize(lambda x: x * 2, x3)[1](f4), ValueError,
         "got tangent aval f32[4] for primal aval f32[3]"),
    case("linearize/tangent_dtype", "dtype",
         lambda a: a.top.linearize(lambda x: x * 2, x3)[1](i3), ValueError,
         "got tangent aval i32[3] for primal aval f32[3]"),
    case("jacfwd/int_input", "dtype", lambda a: a.top.jacfwd(lambda x: x * 2)(i3), TypeError,
         "jacfwd requires real"),
    case("jacrev/int_input", "dtype", lambda a: a.top.jacrev(lambda x: x * 2)(i3), TypeError,
         "jacrev requires real- or complex-valued inputs"),
    case("jacrev/complex_output", "dtype", lambda a: a.top.jacrev(lambda x: x * 1j)(x3),
         TypeError, "jacrev requires real-valued outputs"),
    case("jacrev/bool_output", "dtype", lambda a: a.top.jacrev(lambda x: x > 0)(x3), TypeError,
         "but got bool"),
    case("hessian/not_callable", "non-callable", lambda a: a.top.hessian(3), TypeError,
         "expects a callable, got 3"),
    case("hessian/int_input", "dtype", lambda a: a.top.hessian(lambda x: (x * x).sum())(i3),
         TypeError, "requires real"),
    # --- vmap --------------------------------------------------------------------------------
    case("vmap/not_callable", "non-callable", lambda a: a.top.vmap(3), TypeError,
         "expects a callable, got 3"),
    case("vmap/in_axes_out_of_range", "axis", lambda a: a.top.vmap(lambda x: x, in_axes=1)(x3),
         ValueError, "map its argument along axis 1, which implies that its rank should be at "
         "least 2, but is only 1"),
    case("vmap/in_axes_negative_out_of_range", "axis",
         lambda a: a.top.vmap(lambda x: x, in_axes=-2)(x3), ValueError,
         "map its argument along axis -2"),
    case("vmap/inconsistent_sizes", "rank", lambda a: a.top.vmap(lambda x, y: x + y)(x3, f4),
         ValueError, "vmap got inconsistent sizes for array axes to be mapped"),
    case("vmap/in_axes_tuple_length", "pytree",
         lambda a: a.top.vmap(lambda x, y: x + y, in_axes=(0,))(x3, x3), ValueError,
         "len(in_axes)=1, len(args)=2"),
    case("vmap/in_axes_float", "static", lambda a: a.top.vmap(lambda x: x, in_axes=0.5)(x3),
         TypeError, "vmap in_axes must be an int, None, or"),
    case("vmap/in_axes_string", "static", lambda a: a.top.vmap(lambda x: x, in_axes="0")(x3),
         TypeError, "vmap in_axes must be an int, None, or"),
    case("vmap/nothing_mapped", "axis", lambda a: a.top.vmap(lambda x: x, in_axes=None)(x3),
         ValueError, "vmap must have at least one non-None value in in_axes"),
    case("vmap/no_arguments", "empty", lambda a: a.top.vmap(lambda: 1.0)(), ValueError,
         "must be passed at least one argument containing an array"),
    case("vmap/scalar_argument", "rank", lambda a: a.top.vmap(lambda x: x)(np.float32(1.0)),
         ValueError, "its rank should be at least 1, but is only 0"),
    case("vmap/list_of_scalars", "list-for-array", lambda a: a.top.vmap(lambda x: x)([1.0, 2.0]),
         ValueError, "its rank should be at least 1, but is only 0"),
    case("vmap/out_axes_out_of_range", "axis", lambda a: a.top.vmap(lambda x: x, out_axes=2)(x3),
         ValueError, "out of bounds"),
    case("vmap/out_axes_none_of_mapped_output", "axis",
         lambda a: a.top.vmap(lambda x: x, out_axes=None)(x3), ValueError,
         "mapped output but out_axes is None"),
    case("vmap/axis_size_disagrees", "size", lambda a: a.top.vmap(lambda x: x, axis_size=4)(x3),
         ValueError, "axis_size=4"),
    case("vmap/in_axes_pytree", "pytree",
         lambda a: a.top.vmap(lambda x: x[0], in_axes=((0, 0),))((x3,)), ValueError,
         "vmap in_axes specification must be a tree prefix of the corresponding value"),
    case("vmap/string_argument", "non-array", lambda a: a.top.vmap(lambda x: x)("abc"),
         TypeError, "of type str is not a valid revax type"),
    case("vmap/string_output", "callback", lambda a: a.top.vmap(lambda x: "abc")(x3), TypeError,
         "of type str is not a valid revax type"),
    # --- make_jaxpr, eval_shape ----------------------------------------------------------------
    case("make_jaxpr/not_callable", "non-callable", lambda a: a.top.make_jaxpr(3), TypeError,
         "make_jaxpr expects a callable, got 3"),
    case("make_jaxpr/string_argument", "non-array", lambda a: a.top.make_jaxpr(lambda x: x)("a"),
         TypeError, "of type str is not a valid revax type"),
    case("make_jaxpr/string_output", "callback",
         lambda a: a.top.make_jaxpr(lambda x: "abc")(x3), TypeError,
         "of type str is not a valid revax type"),
    case("make_jaxpr/unhashable_static", "static",
         lambda a: a.top.make_jaxpr(lambda x, n: x, static_argnums=1)(x3, [1]), ValueError,
         "Non-hashable static arguments are not supported"),
    case("eval_shape/string_argument", "non-array", lambda a: a.top.eval_shape(lambda x: x, "a"),
         TypeError, "of type str is not a valid revax type"),
    case("eval_shape/shape_error_inside", "rank",
         lambda a: a.top.eval_shape(lambda x: x + np.ones(4), x3), TypeError,
         "add got incompatible shapes for broadcasting: (3,), (4,)"),
    # --- checkpoint ----------------------------------------------------------------------------
    case("checkpoint/not_callable", "non-callable", lambda a: a.top.checkpoint(3)(x3), TypeError,
         "checkpoint expects a callable, got 3", jax="JAX fails on a weak reference instead"),
    case("checkpoint/policy_not_callable", "non-callable",
         lambda a: a.top.grad(lambda x: a.top.checkpoint(lambda x: a.np.sin(x).sum(), policy=3)(
             x))(x3), TypeError, "checkpoint policy must be a callable"),
    # --- custom_jvp ----------------------------------------------------------------------------
    case("custom_jvp/not_callable", "non-callable", lambda a: a.top.custom_jvp(3), TypeError,
         "custom_jvp expects a callable, got 3", jax=_LAZY),
    case("custom_jvp/no_rule", "callback",
         lambda a: a.top.jvp(a.top.custom_jvp(lambda x: x * 2), (x3,), (x3,)), AttributeError,
         "No JVP defined for custom_jvp function <lambda> using defjvp"),
    case("custom_jvp/rule_not_a_pair", "callback", lambda a: _cj(a, lambda p, t: p[0]),
         TypeError, "must produce a pair (list or tuple of length two)"),
    case("custom_jvp/rule_returns_three", "callback",
         lambda a: _cj(a, lambda p, t: (p[0], t[0], t[0])), TypeError,
         "must produce a pair (list or tuple of length two)"),
    case("custom_jvp/rule_tangent_shape", "callback",
         lambda a: _cj(a, lambda p, t: (a.np.sin(p[0]), t[0][:2])), TypeError,
         "so its tangent must have type f32[3], but got f32[2]"),
    case("custom_jvp/rule_tangent_dtype", "callback",
         lambda a: _cj(a, lambda p, t: (a.np.sin(p[0]), t[0].astype(np.float16))), TypeError,
         "so its tangent must have type f32[3], but got f16[3]"),
    case("custom_jvp/rule_primal_type", "callback",
         lambda a: _cj(a, lambda p, t: (p[0][:2], t[0][:2])), TypeError,
         "must produce primal outputs of the types the custom_jvp function returns",
         jax="JAX returns the rule's mistyped primal without a check"),
    case("custom_jvp/rule_pytree", "callback",
         lambda a: _cj(a, lambda p, t: (a.np.sin(p[0]), (t[0], t[0]))), TypeError,
         "equal container (pytree) structures"),
    case("custom_jvp/rule_string_tangent", "callback",
         lambda a: _cj(a, lambda p, t: (a.np.sin(p[0]), "abc")), TypeError,
         "of type str is not a valid revax type"),
    case("custom_jvp/defjvps_rule_count", "callback", _defjvps_two_rules, ValueError,
         "got 2 rules, but the function was called with 1 arguments"),
    # --- custom_vjp ----------------------------------------------------------------------------
    case("custom_vjp/not_callable", "non-callable", lambda a: a.top.custom_vjp(3), TypeError,
         "custom_vjp expects a callable, got 3", jax=_LAZY),
    case("custom_vjp/no_rule", "callback", lambda a: a.top.custom_vjp(lambda x: x * 2)(x3),
         AttributeError, "No VJP defined for custom_vjp function <lambda> using defvjp"),
    case("custom_vjp/fwd_not_a_pair", "callback",
         lambda a: _cv(a, lambda x: a.np.sin(x), lambda r, g: (g,)), TypeError,
         "must produce a pair (list or tuple of length two)"),
    case("custom_vjp/fwd_primal_type", "callback",
         lambda a: _cv(a, lambda x: (x[:2], x), lambda r, g: (g,)), TypeError,
         "must produce primal outputs of the types the custom_vjp function returns",
         jax="JAX notices only in the bwd output check, with ValueError"),
    case("custom_vjp/bwd_not_a_tuple", "callback",
         lambda a: _cv(a, lambda x: (a.np.sin(x), x), lambda r, g: g), TypeError,
         "must produce a tuple of length equal to the number of arguments"),
    case("custom_vjp/bwd_too_many", "callback",
         lambda a: _cv(a, lambda x: (a.np.sin(x), x), lambda r, g: (g, g)), TypeError,
         "must produce a tuple of length equal to the number of arguments"),
    case("custom_vjp/bwd_shape", "callback",
         lambda a: _cv(a, lambda x: (a.np.sin(x), x), lambda r, g: (g[:2],)), ValueError,
         "shape and dtype of the corresponding primal input: expected f32[3], got f32[2]"),
    case("custom_vjp/bwd_dtype", "callback",
         lambda a: _cv(a, lambda x: (a.np.sin(x), x), lambda r, g: (g.astype(np.float16),)),
         ValueError, "expected f32[3], got f16[3]",
         jax="JAX returns the float16 cotangent as the float32 input's gradient"),
    case("custom_vjp/bwd_string", "callback",
         lambda a: _cv(a, lambda x: (a.np.sin(x), x), lambda r, g: ("abc",)), TypeError,
         "of type str is not a valid revax type"),
    case("custom_vjp/forward_mode", "callback", _jvp_of_custom_vjp, TypeError,
         "can't apply forward-mode autodiff (jvp) to a custom_vjp function"),
    # --- invertible, custom_ivjp (revax only) ------------------------------------------------
    case("invertible/not_callable", "non-callable", lambda a: a.top.invertible(3), TypeError,
         "invertible expects a callable, got 3", jax="revax only"),
    case("invertible/string_output", "callback",
         lambda a: a.top.grad(lambda x: a.top.invertible(lambda x: "abc")(x))(x3), TypeError,
         "returned a value of type str", jax="revax only"),
    case("invertible/not_invertible_without_storing", "callback",
         lambda a: a.top.grad(lambda x: a.top.invertible(lambda x: x * x, allow_storing=False)(
             x).sum())(x3), ValueError, "cannot invert the function", jax="revax only"),
    case("custom_ivjp/not_callable", "non-callable", lambda a: a.top.custom_ivjp(3), TypeError,
         "custom_ivjp expects a callable, got 3", jax="revax only"),
    case("custom_ivjp/no_rule", "callback",
         lambda a: a.top.grad(lambda x: a.top.invertible(a.top.custom_ivjp(lambda x: x * 2))(
             x).sum())(x3), AttributeError, "No ivjp defined for custom_ivjp function",
         jax="revax only"),
    case("custom_ivjp/rule_not_a_pair", "callback", lambda a: _ivjp(a, lambda xs, ys, cts: xs),
         TypeError, "must return a pair (inputs, input_cotangents)", jax="revax only"),
    case("custom_ivjp/rule_pytree", "callback",
         lambda a: _ivjp(a, lambda xs, ys, cts: ((ys / 2, ys), (cts * 2,))), TypeError,
         "with the structure of the block's arguments", jax="revax only"),
    case("custom_ivjp/rule_shapes", "callback",
         lambda a: _ivjp(a, lambda xs, ys, cts: ((ys[:2] / 2,), (cts[:2] * 2,))), TypeError,
         "returned f32[2] where the block's argument has type f32[3]", jax="revax only"),
]


@pytest.mark.parametrize("c", CASES, ids=str)
def test_bad_input(c):
  check(c)
