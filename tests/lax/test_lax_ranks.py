"""jax.lax is strict about ranks (issue 33): every elementwise jax.lax function of two or more
operands over a grid of operand shapes, eagerly and traced, against jax live.

jax.lax broadcasts operands of one rank along their size-1 dimensions, and a 0-d operand (or a
Python scalar) with any shape; operands of different non-zero ranks are a TypeError naming the
primitive ("xor: arrays must have the same number of dimensions, got {1, 2}"), sizes that do
not broadcast another ("add got incompatible shapes for broadcasting: (2, 3), (3, 2)."), and
clamp, select_n and random_gamma_grad have rules of their own. revax's primitives broadcast
ranks (jax.numpy and the batching rules rely on it); its public lax refuses as jax's does.

Each case compares the outcome (the shape and dtype, or the exception's type and message) of
revax eagerly and under `revax.eval_shape` (operands as tracers) with jax's under
`jax.eval_shape` (the same shape rules as jax's eager calls, without compiling).
"""
import jax
import jax.lax as jlax
import numpy as np
import pytest

import revax
import revax.lax as rlax
import revax.numpy as rnp

FLOAT = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "rem", "nextafter",
         "complex", "eq", "ne", "lt", "le", "gt", "ge", "igamma", "igammac", "igamma_grad_a",
         "random_gamma_grad", "polygamma", "zeta"]
INT = ["bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_logical",
       "shift_right_arithmetic"]
TERNARY = {"betainc": "fff", "clamp": "fff", "select_n": "bff", "select": "bff"}
PY = "py"  # a Python scalar operand
SHAPES2 = [((3,), (3,)), ((), (3,)), (PY, (3,)), ((3,), PY), ((1,), (3,)), ((2, 3), (3,)),
           ((3,), (2, 3)), ((2, 1), (1, 3)), ((2, 3), (3, 2)), ((2, 3), (4,)), ((1, 3), (3,)),
           ((), ()), ((2, 3), (1,)), ((0,), (2, 0)), ((0,), (1,))]
SHAPES3 = [((3,), (3,), (3,)), ((), (3,), ()), ((), (3,), (3,)), ((3,), (2, 3), (3,)),
           ((1,), (3,), (3,)), (PY, (3,), PY), ((2, 3), (3,), (3,)), ((3,), (3,), (2, 3)),
           ((2, 3), (2, 3), (3,)), ((2, 1), (2, 3), (2, 3)), ((2, 3), (2, 1), (2, 1)),
           ((), (), ()), ((3,), (2, 3), (1, 2, 3)), ((1, 2, 3), (), (3,))]
FUNCTIONS = ([(n, "ff") for n in FLOAT] + [(n, "ii") for n in INT]
             + list(TERNARY.items()))


def _value(shape, kind, k, numpy_module):
  if shape == PY:
    return {"f": 1.5, "i": 2, "b": True}[kind]
  n = int(np.prod(shape))
  if kind == "f":
    v = (np.arange(n, dtype=np.float32) % 3 + 0.5 + 0.25 * k).reshape(shape)
  elif kind == "i":
    v = (np.arange(n, dtype=np.int32) % 3 + k).reshape(shape)
  else:
    v = (np.arange(n) % 2 == 0).reshape(shape)
  return v if numpy_module is None else numpy_module.asarray(v)


def _operands(shapes, kinds, numpy_module, first_as_numpy):
  """Operands of `shapes`: Arrays of the library (`numpy_module.asarray`), the first a NumPy
  array when `first_as_numpy`, Python scalars where the shape is PY."""
  return [_value(s, d, k, None if (first_as_numpy and k == 0) else numpy_module)
          for k, (s, d) in enumerate(zip(shapes, kinds, strict=True))]


def _outcome(call):
  try:
    out = call()
  except Exception as e:  # noqa: BLE001 (the outcome is the exception)
    return (type(e).__name__, str(e).split("\n")[0])
  return ("ok", tuple(out.shape), str(out.dtype))


def _abstractly(eval_shape, fun, operands):
  """`fun(*operands)` under `eval_shape`, the array operands as its arguments (tracers), Python
  scalars closed over."""
  arrays = [x for x in operands if not isinstance(x, (bool, int, float))]

  def traced(*xs):
    it = iter(xs)
    return fun(*[next(it) if not isinstance(x, (bool, int, float)) else x for x in operands])
  return lambda: eval_shape(traced, *arrays)


def _cases(name, kinds):
  for shapes in (SHAPES3 if len(kinds) == 3 else SHAPES2):
    for first_as_numpy in (False, True):
      yield shapes, first_as_numpy


@pytest.mark.parametrize("name,kinds", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_lax_refuses_shapes_as_jax(name, kinds):
  rf, jf = getattr(rlax, name), getattr(jlax, name)
  differ = []
  for shapes, first_as_numpy in _cases(name, kinds):
    r_args = _operands(shapes, kinds, rnp, first_as_numpy)
    j_args = _operands(shapes, kinds, jax.numpy, first_as_numpy)
    want = _outcome(_abstractly(jax.eval_shape, jf, j_args))
    for how, got in (("eager", _outcome(lambda: rf(*r_args))),
                     ("traced", _outcome(_abstractly(revax.eval_shape, rf, r_args)))):
      if got != want:
        differ.append(f"{name}{shapes} numpy-first={first_as_numpy} {how}: revax {got}, "
                      f"jax {want}")
  assert not differ, "\n".join(differ)


def test_the_grid_has_both_outcomes():
  """The grid is not vacuous: for add it holds accepted cases, rank refusals and size refusals
  (by jax's own outcomes)."""
  seen = set()
  for shapes, _ in _cases("add", "ff"):
    out = _outcome(_abstractly(jax.eval_shape, jlax.add,
                               _operands(shapes, "ff", jax.numpy, False)))
    seen.add("ok" if out[0] == "ok" else
              "rank" if "same number of dimensions" in out[1] else
              "size" if "incompatible shapes" in out[1] else out[1])
  assert seen == {"ok", "rank", "size"}


def test_vmap_refuses_per_example_ranks():
  """Under vmap revax's rank rule reads the per-example operands. jax's reads the batched ones
  inside its batching rule: an unmapped (3,) next to a mapped (5, 3, 4) is its TypeError too
  (naming the batched ranks, {2, 3}); two mapped operands of different per-example ranks jax
  broadcasts aligned at the leading dims (its batching rule pads the lower rank with trailing
  1s), where revax refuses (a known difference: NumPy aligns trailing dims, which is what
  jax.numpy's functions do under vmap in both)."""
  x, y = np.ones((5, 3, 4), np.float32), np.ones(3, np.float32)
  with pytest.raises(TypeError, match="^add: arrays must have the same number of dimensions"):
    jax.vmap(jlax.add, in_axes=(0, None))(x, y)
  with pytest.raises(TypeError, match=r"^add: arrays must have the same number of dimensions, "
                                      r"got \{1, 2\}$"):
    revax.vmap(rlax.add, in_axes=(0, None))(x, y)
  # same per-example ranks broadcast along size-1 dims in both
  z = np.ones((5, 1, 4), np.float32)
  np.testing.assert_array_equal(revax.vmap(rlax.add)(x, z), jax.vmap(jlax.add)(x, z))


def test_jax_numpy_still_broadcasts_ranks():
  """jax.numpy promotes ranks before calling lax (jax's promote_shapes); revax's does too."""
  x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3, dtype=np.float32)
  for name in ("add", "multiply", "maximum", "arctan2", "power", "bitwise_and", "less",
               "left_shift", "nextafter", "remainder"):
    a, b = (x.astype(np.int32), y.astype(np.int32)) if name in (
        "bitwise_and", "left_shift") else (x, y)
    got = getattr(rnp, name)(a, b)
    want = getattr(jax.numpy, name)(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype, name
    # (values within 1e-6: eager arctan2 is NumPy's, one ulp from XLA's at some points)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, err_msg=name)
