"""Primitives that jax.lax exports as objects and its functions bind (copy_p behind jnp.array and
jnp.copy, mulhi_p, split_p, tile_p, ...), against jax 0.10.2: the function binds the primitive
of the same name with jax's params, values are bit-identical (eager and jit), and grad, jvp and
vmap give jax's values and bind the primitive as jax's do."""
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import revax
import revax.flatten_util
import revax.numpy as rnp
from revax._src.core.typecheck import check_jaxpr
from tests import platform_tolerances
from tests.platform_tolerances import ON_TPU

LIBS = {"jax": (jax, jnp), "revax": (revax, rnp)}
rs = np.random.RandomState(0)
F = rs.randn(3, 4).astype(np.float32)
I = rs.randint(-2 ** 31, 2 ** 31 - 1, (3, 4), dtype=np.int64).astype(np.int32)
U = rs.randint(0, 2 ** 32 - 1, (3, 4), dtype=np.uint64).astype(np.uint32)


# jax, the oracle, runs on the CPU; on a TPU machine revax's device params name the chip
_ORACLE_PLATFORM = {"tpu": "cpu"} if ON_TPU else {}


def _param(v):
  """A param as comparable plain data (NumPy ints as ints, enums by name)."""
  if isinstance(v, (tuple, list)):
    return tuple(map(_param, v))
  if isinstance(v, np.integer):
    return int(v)
  if hasattr(v, "platform") and hasattr(v, "id") and not callable(v.id):  # a Device
    return ("device", _ORACLE_PLATFORM.get(v.platform, v.platform), v.id)
  if type(v).__name__.endswith("Sharding"):  # (jax's and revax's print alike)
    return repr(v).replace("TpuDevice", "CpuDevice") if ON_TPU else repr(v)
  if hasattr(v, "eqns"):  # a jaxpr: its equations' primitives (variable names differ)
    return tuple(e.primitive.name for e in v.eqns)
  if hasattr(v, "name") and hasattr(v, "value"):
    return v.name
  return v


def _sas(l):
  """Each library's select_and_scatter builder (jax's is private: it binds the public
  select_and_scatter_p)."""
  if l[0] is jax:
    from jax._src.lax.windowed_reductions import _select_and_scatter
    return _select_and_scatter
  from revax._src.lax.windowed import select_and_scatter
  return select_and_scatter


# jax's scatters carry their combiner as a jaxpr (update_jaxpr, update_consts); revax's scatter
# primitives each have a fixed combiner and no such params
_NOT_COMPARED = {"update_jaxpr", "update_consts"}
# revax's x.at[idx] updates scatter into the flattened operand (indexing.py), jax's into the
# operand as it is: the same primitive with other dimension numbers
NAMES_ONLY = {"at subtract", "jnp.subtract.at"}


def _bound(closed, names):
  """(name, params) of the equations binding one of `names`, those inside jit equations too
  (jax wraps some jax.numpy functions in a jit), other nested jaxprs left out."""
  out = []
  for e in closed.jaxpr.eqns:
    if e.primitive.name in names:
      out.append((e.primitive.name, {k: _param(v) for k, v in e.params.items()
                                     if k not in _NOT_COMPARED}))
    elif e.primitive.name in ("jit", "pjit"):
      out += _bound(e.params["jaxpr"], names)
  return out


def _values(out):
  return [(np.asarray(o).dtype.name, np.asarray(o).shape, np.asarray(o).tobytes())
          for o in jax.tree.leaves(out)]


# name -> (primitive names, fn(lib) -> function, args, differentiable)
CASES = {
    "jnp.array copies": ({"copy"}, lambda l: lambda x: l[1].array(x) * 2, (F,), True),
    "jnp.copy": ({"copy"}, lambda l: lambda x: l[1].copy(x), (F,), True),
    "method copy": ({"copy"}, lambda l: lambda x: x.copy(), (I,), False),
    "array with dtype": ({"copy"}, lambda l: lambda x: l[1].array(x, dtype=l[1].int32), (F,),
                         False),
    "copy_p": ({"copy"}, lambda l: lambda x: l[0].lax.copy_p.bind(x), (F,), True),
    "mulhi i32": ({"mulhi"}, lambda l: l[0].lax.mulhi, (I, I[::-1].copy()), False),
    "mulhi u32": ({"mulhi"}, lambda l: l[0].lax.mulhi, (U, U[::-1].copy()), False),
    "mulhi i8 rows": ({"mulhi"}, lambda l: l[0].lax.mulhi,
                      (I.astype(np.int8), I[:1].astype(np.int8)), False),
    "mulhi weak scalar": ({"mulhi"}, lambda l: lambda x: l[0].lax.mulhi(x, 1000003), (I,), False),
    "mulhi_p": ({"mulhi"}, lambda l: lambda x, y: l[0].lax.mulhi_p.bind(x, y), (U, U), False),
    "lax.split": ({"split"}, lambda l: lambda x: l[0].lax.split(x, (1, 3), 1), (F,), True),
    "lax.split neg axis": ({"split"}, lambda l: lambda x: l[0].lax.split(x, (2, 1, 0), -2),
                           (F,), True),
    "jnp.split": ({"split"}, lambda l: lambda x: l[1].split(x, 2, axis=1), (F,), True),
    "jnp.array_split": ({"split"}, lambda l: lambda x: l[1].array_split(x, 3), (I,), False),
    "ravel_pytree": ({"split"}, lambda l: lambda x: l[0].flatten_util.ravel_pytree(
        (x, x[0]))[1](l[1].arange(16.0)), (F,), False),
    "lax.unstack": ({"unstack"}, lambda l: lambda x: l[0].lax.unstack(x, 1), (F,), True),
    "jnp.unstack": ({"unstack"}, lambda l: lambda x: l[1].unstack(x), (I,), False),
    "lax.stack": ({"stack"}, lambda l: lambda x: l[0].lax.stack([x, 2 * x], 1), (F,), True),
    "jnp.stack": ({"stack"}, lambda l: lambda x: l[1].stack([x, x * x, x], -1), (F,), True),
    "jnp.stack promotes": ({"stack"}, lambda l: lambda x, y: l[1].stack([x, y]), (F, I), False),
    "lax.tile": ({"tile"}, lambda l: lambda x: l[0].lax.tile(x, (2, 3)), (F,), True),
    "jnp.tile": ({"tile"}, lambda l: lambda x: l[1].tile(x, (2, 1, 2)), (F,), True),
    "lax.reduce_xor": ({"reduce_xor"}, lambda l: lambda x: l[0].lax.reduce_xor(x, (1,)), (U,),
                       False),
    "reduce_xor bool": ({"reduce_xor"}, lambda l: lambda x: l[0].lax.reduce_xor(x > 0, (0, 1)),
                        (F,), False),
    "lax.reduce xor": ({"reduce_xor"}, lambda l: lambda x: l[0].lax.reduce(
        x, np.int32(0), l[0].lax.bitwise_xor, (0,)), (I,), False),
    "lax.cumlogsumexp": ({"cumlogsumexp"}, lambda l: lambda x: l[0].lax.cumlogsumexp(x, 1),
                         (F,), True),
    "cumlogsumexp reverse": ({"cumlogsumexp"}, lambda l: lambda x: l[0].lax.cumlogsumexp(
        x, 0, True), (F,), True),
    "lax.scatter_sub": ({"scatter-sub"}, lambda l: lambda x, u: l[0].lax.scatter_sub(
        x, np.array([[2], [0], [2]], np.int32), u, l[0].lax.ScatterDimensionNumbers(
            (1,), (0,), (0,))), (F, F), True),
    "at subtract": ({"scatter-sub"}, lambda l: lambda x, u: l[1].asarray(x).at[
        np.array([1, 1, 0])].subtract(u), (F, F), True),
    "jnp.subtract.at": ({"scatter-sub"}, lambda l: lambda x, u: l[1].subtract.at(
        x, np.array([2, 2]), u[:2], inplace=False), (F, F), True),
    "eq_to_p": ({"eq_to"}, lambda l: lambda x, y: l[0].lax.eq_to_p.bind(x, y),
                (np.array([np.nan, -0.0, 1.0], np.float32), np.array([np.nan, 0.0, 1.0],
                                                                       np.float32)), False),
    "lt_to_p": ({"lt_to"}, lambda l: lambda x, y: l[0].lax.lt_to_p.bind(x, y),
                (np.array([-np.nan, -0.0, np.inf], np.float32),
                 np.array([-np.inf, 0.0, np.nan], np.float32)), False),
    "le_to_p ints": ({"le_to"}, lambda l: lambda x, y: l[0].lax.le_to_p.bind(x, y), (I, I[::-1]),
                     False),
    "approx_max_k": ({"approx_top_k"}, lambda l: lambda x: l[0].lax.approx_max_k(x, 2), (F,),
                     True),
    "approx_min_k axis 0": ({"approx_top_k"}, lambda l: lambda x: l[0].lax.approx_min_k(
        x, 2, reduction_dimension=0, recall_target=0.9), (F,), True),
    "approx_max_k not aggregated": ({"approx_top_k"}, lambda l: lambda x: l[0].lax.approx_max_k(
        l[1].tile(x, (1, 64)), 3, aggregate_to_topk=False), (F,), False),
    "scaled_dot": ({"scaled_dot"}, lambda l: lambda x, y: l[0].lax.scaled_dot(x, y.T), (F, F),
                   False),
    "scaled_dot scales": ({"scaled_dot"}, lambda l: lambda x, y: l[0].lax.scaled_dot(
        x, y.T, lhs_scale=np.full((3, 2), 2.0, np.float32),
        rhs_scale=np.full((2, 3), 0.5, np.float32), preferred_element_type=np.float32),
        (F, F), False),
    "select_and_scatter": ({"select_and_scatter"}, lambda l: lambda x, u: _sas(l)(
        x, l[0].lax.ge, (1, 2), (1, 2), ((0, 0), (0, 0)), u[:, :2], np.float32(0),
        l[0].lax.add), (F, F), False),
    "device_put": ({"device_put"}, lambda l: lambda x: l[0].device_put(x, l[0].devices()[0]),
                   (F,), True),
    "device_put pytree donate": ({"device_put"}, lambda l: lambda x: l[0].device_put(
        (x, 2 * x), donate=True), (F,), False),
    "device_put copy": ({"device_put"}, lambda l: lambda x: l[0].device_put(x, may_alias=False),
                        (F,), True),
    "device_put single-device sharding": ({"device_put"}, lambda l: lambda x: l[0].device_put(
        x, l[0].sharding.SingleDeviceSharding(l[0].devices()[0])), (F,), True),
    "device_put Auto mesh": ({"device_put"}, lambda l: lambda x: l[0].device_put(
        (x, x), (l[0].sharding.NamedSharding(l[0].make_mesh(
            (1,), ("x",), axis_types=(l[0].sharding.AxisType.Auto,)),
            l[0].sharding.PartitionSpec("x")), None)), (F,), True),
    "jnp.tile int": ({"tile"}, lambda l: lambda x: l[1].tile(x, 3), (I,), False),
}


def test_mulhi_errors_are_jax_s():
  for args in [(F, F), (I, I.astype(np.int16)), (I, I[0])]:
    with pytest.raises(TypeError) as want:
      jax.lax.mulhi(*args)
    with pytest.raises(TypeError) as got:
      revax.lax.mulhi(*args)
    if np.ndim(args[1]) != np.ndim(args[0]):
      assert str(got.value) == str(want.value)


# Cases whose values are jax's to a tolerance, not bit for bit: revax's cumlogsumexp keeps its
# own stable scan (shifted by the larger operand, bit-identical to what revax computed before it
# had the primitive); jax's logaddexp rounds differently in the last bit. jax's JVP of it
# recomputes the primal by a scan of logaddexp, so its grad binds no cumlogsumexp.
CLOSE = {"lax.cumlogsumexp", "cumlogsumexp reverse"}


def _same_values(got, want, name):
  if name not in CLOSE:
    assert got == want
    return
  for (gd, gs, gb), (wd, ws, wb) in zip(got, want, strict=True):
    assert (gd, gs) == (wd, ws)
    np.testing.assert_allclose(np.frombuffer(gb, gd), np.frombuffer(wb, wd),
                               **platform_tolerances.allclose_tol(rtol=2e-6))  # (exp, log)


def _case(name, lib):
  prims, make, args, diff = CASES[name]
  return prims, make(LIBS[lib]), args, diff


@pytest.mark.parametrize("name", list(CASES))
def test_binds_jax_s_primitive_with_jax_s_params(name):
  got = []
  for lib in ("jax", "revax"):
    prims, f, args, _ = _case(name, lib)
    closed = LIBS[lib][0].make_jaxpr(f)(*args)
    if lib == "revax":
      check_jaxpr(closed)
    got.append(_bound(closed, prims))
  assert got[0], f"jax binds none of {prims}"
  if name in NAMES_ONLY:
    assert [n for n, _ in got[1]] == [n for n, _ in got[0]]
  else:
    assert got[1] == got[0]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("how", ["eager", "jit"])
def test_values_are_jax_s_bit_for_bit(name, how):
  """Each case's values, eager and jitted, are jax's bits (CLOSE: within float32 rounding). On
  a TPU too for select_and_scatter, whose 2-d window jax 0.10.2 leaves to XLA:TPU, which refuses
  it ("not implemented for TPU": tests/tpu/probe_select_and_scatter.py); revax lays the window
  out as XLA:TPU implements it (lax/windowed.py, `_to_minor_inactive`)."""
  got = []
  for lib in ("jax", "revax"):
    _, f, args, _ = _case(name, lib)
    j = LIBS[lib][0]
    got.append(_values((j.jit(f) if how == "jit" else f)(*args)))
  _same_values(got[1], got[0], name)


def _scalar(j, f):
  return lambda *xs: sum((o.astype(np.float32) * (k + 1)).sum()
                         for k, o in enumerate(j.tree.leaves(f(*xs))))


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][3]])
def test_grads_are_jax_s(name):
  got, jaxprs = [], []
  for lib in ("jax", "revax"):
    prims, f, args, _ = _case(name, lib)
    j = LIBS[lib][0]
    g = j.grad(_scalar(j, f))
    got.append(_values(g(*args)))
    jaxprs.append(_bound(j.make_jaxpr(g)(*args), prims))
  np.testing.assert_allclose(*[np.frombuffer(v[0][2], np.float32) for v in got], rtol=1e-6)
  if name not in CLOSE and name not in NAMES_ONLY:
    assert jaxprs[1] == jaxprs[0]


# jax has no batching rule for select_and_scatter (NotImplementedError): revax's vmap is checked
# against jax's results example by example instead
NO_JAX_VMAP = {"select_and_scatter"}


@pytest.mark.parametrize("name", sorted(NO_JAX_VMAP))
def test_vmap_without_a_jax_rule_stacks_jax_s_examples(name):
  prims, f, args, _ = _case(name, "revax")
  _, g, _, _ = _case(name, "jax")
  batched = [np.stack([a, a[::-1]]) for a in args]
  with pytest.raises(NotImplementedError):
    jax.vmap(g)(*batched)
  got = revax.vmap(f)(*batched)
  want = np.stack([np.asarray(g(*[b[i] for b in batched])) for i in range(2)])
  np.testing.assert_array_equal(np.asarray(got), want)
  check_jaxpr(revax.make_jaxpr(revax.vmap(f))(*batched))


@pytest.mark.parametrize("name", [n for n in CASES if n not in NO_JAX_VMAP])
def test_vmap_is_jax_s(name):
  got, jaxprs = [], []
  for lib in ("jax", "revax"):
    prims, f, args, _ = _case(name, lib)
    j = LIBS[lib][0]
    batched = [np.stack([a, a[::-1]], axis=1) if np.ndim(a) >= 2 else np.stack([a, a])
               for a in args]
    g = j.vmap(f, in_axes=1 if np.ndim(args[0]) >= 2 else 0)
    got.append(_values(g(*batched)))
    closed = j.make_jaxpr(g)(*batched)
    if lib == "revax":
      check_jaxpr(closed)
    jaxprs.append(_bound(closed, prims))
  _same_values(got[1], got[0], name)
  assert [n for n, _ in jaxprs[1]] == [n for n, _ in jaxprs[0]]


def test_approx_top_k_output_sizes_are_xla_s():
  """aggregate_to_topk=False keeps as many values as XLA's approximate reduction would: the
  sizes against jaxlib's own function, over ranks, sizes, k, recall targets and overrides."""
  from jax._src.lib import _jax

  from revax._src.lax.sorting import approx_top_k_reduction_output_size as ours
  for rank in (1, 2, 3):
    for n in (1, 100, 129, 1000, 1025, 3000, 4096, 65536):
      for k in (1, 2, 5, 50, 128):
        for recall in (0.5, 0.9, 0.95, 0.999, 1.0):
          for override in (-1, n, 2 * n, 10 * n):
            if k <= n:
              want = tuple(_jax.approx_top_k_reduction_output_size(n, rank, k, recall, False,
                                                                   override))
              assert ours(n, rank, k, recall, False, override) == want, (rank, n, k, recall,
                                                                          override)


def test_total_order_comparisons_refuse_complex_operands():
  """jax's eq_to_p takes complex operands and XLA's verifier then fails at run time (a
  JaxRuntimeError: TOTALORDER compares real numbers only); revax refuses them when typing."""
  c = np.array([1 + 1j, 2], np.complex64)
  with pytest.raises(Exception, match="TOTALORDER"):
    jax.lax.eq_to_p.bind(c, c)
  with pytest.raises(TypeError, match="total order compares real numbers only"):
    revax.lax.eq_to_p.bind(c, c)


def _shape_as_value_outcomes(lib, np_, export):
  """lax.shape_as_value of concrete and symbolic shapes: types, dtypes, values, and an exported
  shape-polymorphic program called at two shapes."""
  out = []
  for shape in [(2, 3), (), (7,)]:
    v = lib.lax.shape_as_value(shape)
    out.append((type(v).__name__ == "ndarray", np.asarray(v).dtype.name, np.asarray(v).tolist()))
  b, = export.symbolic_shape("b")
  f = lambda x: lib.lax.shape_as_value(x.shape) * 2
  exp = export.export(lib.jit(f))(lib.ShapeDtypeStruct((b, 3), np_.float32))
  out.append([str(a) for a in exp.out_avals])
  for n in (1, 5):
    out.append(np.asarray(exp.call(np.ones((n, 3), np.float32))).tolist())
  closed = lib.make_jaxpr(f)(lib.ShapeDtypeStruct((b, 3), np_.float32))
  out.append([e.primitive.name for e in closed.jaxpr.eqns])
  return out


def test_shape_as_value_is_jax_s():
  import jax.export
  import revax.export
  assert (_shape_as_value_outcomes(revax, rnp, revax.export)
          == _shape_as_value_outcomes(jax, jnp, jax.export))
