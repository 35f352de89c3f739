"""The differential fuzzer's machinery: profiles, input values, transformations, comparisons.

A fuzz case is a `Program` (a function written once against an `Api` namespace, so the same code
builds the revax and the JAX version, plus one `ArgSpec` per argument) and a transformation drawn
by hypothesis (value, grad, jvp, vjp, linearize, vmap with random in_axes/out_axes, and
compositions such as jit(vmap(grad)) or forward-over-reverse). `run_case` evaluates the
transformed function three ways -- revax eager, revax jit and `jax.jit` -- and compares shapes,
dtypes and values with tolerances chosen by dtype.

Inputs are drawn from a NumPy generator seeded by hypothesis. Floating-point values are
pairwise distinct across all arguments of a call and kept away from zero (and from each domain's
edges), so max/min/sort/pooling have no ties and abs/relu/sign no kinks: where derivatives are
compared, both systems must take the same branch.

Profiles: "ci" (the default; deterministic, a few hundred examples in all) and "soak" (selected
by env REVAX_FUZZ_PROFILE=soak: random, fifty times more examples, failures kept in hypothesis'
example database so a rerun replays them first).
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import revax
import revax.lax as rlax
import revax.nn as rnn
import revax.numpy as rnp

import jax  # the oracle: tests import it, revax never does
import jax.numpy as jnp

# --- profiles --------------------------------------------------------------------------------
PROFILE_ENV = "REVAX_FUZZ_PROFILE"
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.large_base_example]
# max_examples is per fuzz test (a test may scale it with `fuzz_settings(weight)`).
settings.register_profile("ci", max_examples=24, derandomize=True, database=None, deadline=None,
                          print_blob=False, suppress_health_check=_HEALTH)
settings.register_profile("soak", max_examples=1200, derandomize=False, deadline=None,
                          print_blob=True, suppress_health_check=_HEALTH)
PROFILE = os.environ.get(PROFILE_ENV, "ci")
if PROFILE not in ("ci", "soak"):
  raise ValueError(f"{PROFILE_ENV} must be 'ci' or 'soak', got {PROFILE!r}")


def fuzz_settings(weight: float = 1.0) -> settings:
  """The selected profile, with `weight` times its per-test number of examples."""
  base = settings.get_profile(PROFILE)
  return settings(base, max_examples=max(1, round(base.max_examples * weight)))


# --- the two implementations, behind one namespace ----------------------------------------------
@dataclasses.dataclass(frozen=True)
class Api:
  """What a program may call: `top` (jit/grad/vmap/...), `np`, `lax`, `nn`."""
  name: str
  top: object
  np: object
  lax: object
  nn: object

  def __repr__(self):
    return self.name


REVAX = Api("revax", revax, rnp, rlax, rnn)
JAX = Api("jax", jax, jnp, jax.lax, jax.nn)

F32, BF16, F16, I32, BOOL = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16),
                             np.dtype(np.float16), np.dtype(np.int32), np.dtype(np.bool_))
PYFLOAT, PYINT = "pyfloat", "pyint"  # Python scalar arguments (weakly typed)


def is_inexact(dtype) -> bool:
  """Floating or complex, bfloat16 included (NumPy does not count it as np.inexact)."""
  return jnp.issubdtype(np.dtype(dtype), jnp.inexact)

# Domains: unions of closed intervals the values of an argument are drawn from (away from 0 and
# from the edges where a function or its derivative blows up).
DOMAINS = {
    "real": ((-3.0, -0.25), (0.25, 3.0)),
    "positive": ((0.25, 3.0),),
    "unit": ((-0.85, -0.05), (0.05, 0.85)),
    "ge1": ((1.2, 3.0),),
    "small": ((-1.5, -0.1), (0.1, 1.5)),
    "negative": ((-3.0, -0.25),),
}
# Integer arguments: "range:lo:hi" draws integers in [lo, hi); otherwise [-4, 5) ([1, 5) for
# "positive").


@dataclasses.dataclass(frozen=True)
class ArgSpec:
  """One argument: shape, dtype (a NumPy dtype or PYFLOAT/PYINT) and value domain."""
  shape: tuple
  dtype: object = F32
  domain: str = "real"

  @property
  def is_python(self):
    return isinstance(self.dtype, str)

  @property
  def is_float(self):
    return self.dtype == PYFLOAT or (not self.is_python and is_inexact(self.dtype))

  @property
  def ndim(self):
    return len(self.shape)

  def short(self):
    dt = self.dtype if self.is_python else self.dtype.name
    return f"{dt}{list(self.shape)}" if not self.is_python else dt


@dataclasses.dataclass(frozen=True)
class Program:
  """A function of positional arguments, built against an `Api` by `build(api)`.

  Attributes:
    name: what it computes, for failure messages.
    build: api -> function.
    specs: one ArgSpec per argument.
    diff: the argument numbers derivatives are taken with respect to (floating arrays).
    tol: multiplier of the dtype tolerances (accumulating ops such as dot and conv need more).
    smooth: False for programs whose derivatives are meaningless (integer outputs): only value
      and vmap transformations are drawn.
    reverse: False where JAX has no reverse mode (forward-mode transformations only).
    skip: transformations not to draw (where JAX fails on them; the generator says why).
  """
  name: str
  build: Callable
  specs: tuple
  diff: tuple = ()
  tol: float = 1.0
  smooth: bool = True
  reverse: bool = True
  skip: tuple = ()

  def __repr__(self):
    args = ", ".join(s.short() for s in self.specs)
    return f"Program({self.name}; args=({args}); diff={self.diff})"


def default_diff(specs) -> tuple:
  """Argument numbers of the floating-point array arguments."""
  return tuple(i for i, s in enumerate(specs) if s.is_float and not s.is_python)


# --- values --------------------------------------------------------------------------------
_LOW_PRECISION = (BF16, F16)
with np.errstate(invalid="ignore"):  # the NaN bit patterns
  _BF16_VALUES = np.arange(2 ** 16, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
_BF16_VALUES = np.unique(_BF16_VALUES[np.isfinite(_BF16_VALUES) & (np.abs(_BF16_VALUES) < 4)])


def _distinct_floats(rng, n: int, domain: str, dtype) -> np.ndarray:
  """n pairwise distinct values in `domain`, exactly representable in `dtype`, shuffled."""
  intervals = DOMAINS[domain]
  lengths = np.array([hi - lo for lo, hi in intervals])
  total = lengths.sum()
  if dtype in _LOW_PRECISION:
    # bfloat16 values (exact in float16 too) inside the domain: ~900 in "real". Arrays larger
    # than that (rare: big vmapped batches) repeat values, which only looser checks tolerate.
    grid = _BF16_VALUES[np.any([(lo <= _BF16_VALUES) & (_BF16_VALUES <= hi)
                                for lo, hi in intervals], axis=0)]
    return rng.choice(grid, size=n, replace=n > len(grid))
  # A jittered grid: neighbours are at least 0.4 * total / n apart.
  positions = (rng.permutation(n) + 0.5 + rng.uniform(-0.3, 0.3, n)) * (total / n)
  out = np.empty(n)
  starts = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
  for (lo, _), start, length in zip(intervals, starts, lengths, strict=True):
    inside = (positions >= start) & (positions < start + length)
    out[inside] = lo + positions[inside] - start
  return out


def make_values(rng, specs) -> list:
  """Concrete arguments for `specs`: floats distinct across all of them (per domain)."""
  float_specs = [(i, s) for i, s in enumerate(specs) if s.is_float]
  by_domain: dict = {}
  for i, s in float_specs:
    lowp = (not s.is_python) and s.dtype in _LOW_PRECISION
    by_domain.setdefault((s.domain, lowp), []).append((i, s))
  values: dict = {}
  for (domain, lowp), group in by_domain.items():
    sizes = [1 if s.is_python else math.prod(s.shape) for _, s in group]
    pool = _distinct_floats(rng, max(sum(sizes), 1), domain, BF16 if lowp else F32)
    start = 0
    for (i, s), size in zip(group, sizes, strict=True):
      chunk = pool[start:start + size]
      start += size
      values[i] = float(chunk[0]) if s.is_python else chunk.reshape(s.shape).astype(s.dtype)
  out = []
  for i, s in enumerate(specs):
    if i in values:
      out.append(values[i])
    elif s.dtype == PYINT:
      out.append(int(rng.integers(1, 4)))
    elif s.dtype == BOOL:
      out.append(rng.random(s.shape) < 0.5)
    elif s.domain.startswith("range:"):  # integers in [lo, hi)
      lo, hi = map(int, s.domain.split(":")[1:])
      out.append(rng.integers(lo, hi, s.shape).astype(s.dtype))
    else:
      lo = 1 if s.domain == "positive" else -4
      out.append(rng.integers(lo, 5, s.shape).astype(s.dtype))
  return out


def _weights(shape, dtype=np.float32) -> np.ndarray:
  """A fixed, shape-determined cotangent: distinct weights so that permutations show."""
  n = math.prod(shape)
  return (np.cos(np.arange(n) * 0.77 + 0.3) + 0.1).reshape(shape).astype(dtype)


def weighted_sum(api: Api, out):
  """sum(leaf * weights) over the floating leaves of `out`, accumulated in float32."""
  total = 0.0
  for leaf in api.top.tree_util.tree_leaves(out):
    if not is_inexact(leaf.dtype):
      continue
    total = total + api.np.sum(leaf.astype(np.float32) * _weights(leaf.shape))
  return total


# --- transformations -------------------------------------------------------------------------
VALUE_TRANSFORMS = ("value", "vmap")
FORWARD_TRANSFORMS = ("jvp", "vmap_jvp", "jacfwd")
REVERSE_TRANSFORMS = ("grad", "value_and_grad", "vjp", "linearize", "vmap_grad", "grad_of_vmap",
                      "jit_vmap_grad", "jvp_of_grad", "checkpoint_grad")
DIFF_TRANSFORMS = FORWARD_TRANSFORMS + REVERSE_TRANSFORMS


@dataclasses.dataclass
class Case:
  """A transformed program, ready to run: `fn(api)` and its arguments."""
  transform: str
  fn: Callable
  args: list
  detail: str = ""


def _split_diff(program, args):
  """(function of the differentiated arguments only, their values)."""
  diff = program.diff

  def with_diff(f):
    def g(*d):
      full = list(args)
      for i, v in zip(diff, d, strict=True):
        full[i] = v
      return f(*full)
    return g
  return with_diff, [args[i] for i in diff]


def _tangents(rng, program, args):
  out = []
  for i in program.diff:
    a = np.asarray(args[i])
    out.append(rng.standard_normal(a.shape).astype(a.dtype))
  return tuple(out)


def _batched(rng, program, data, specs):
  """Batched argument specs (size and in_axes drawn), or None when nothing can be mapped."""
  mappable = [i for i, s in enumerate(specs) if not s.is_python]
  if not mappable:
    return None
  size = data.draw(st.integers(1, 3), label="batch size")
  axes = []
  for i, s in enumerate(specs):
    if i not in mappable:
      axes.append(None)
      continue
    choice = data.draw(st.integers(-1, s.ndim), label=f"in_axes[{i}]")
    axes.append(None if choice < 0 else choice)
  if all(a is None for a in axes):
    k = mappable[data.draw(st.integers(0, len(mappable) - 1), label="forced mapped arg")]
    axes[k] = data.draw(st.integers(0, specs[k].ndim), label=f"in_axes[{k}] forced")
  # Negative in_axes spell the same positions the other way round.
  signed = [a if a is None or not data.draw(st.booleans(), label="negative axis")
            else a - specs[i].ndim - 1 for i, a in enumerate(axes)]
  bspecs = tuple(s if a is None else dataclasses.replace(
      s, shape=s.shape[:a] + (size,) + s.shape[a:]) for s, a in zip(specs, axes, strict=True))
  return bspecs, tuple(signed), size


def make_case(program: Program, data, seed: int) -> Case:
  """Draw a transformation of `program` (and its extra parameters) and the input values."""
  rng = np.random.default_rng(seed)
  choices = VALUE_TRANSFORMS
  if program.smooth and program.diff:
    choices += FORWARD_TRANSFORMS + (REVERSE_TRANSFORMS if program.reverse else ())
  transform = data.draw(st.sampled_from([c for c in choices if c not in program.skip]),
                        label="transform")
  specs = program.specs
  base = program.build
  needs_batch = transform in ("vmap", "vmap_grad", "grad_of_vmap", "jit_vmap_grad", "vmap_jvp")
  detail = ""
  if needs_batch:
    batched = _batched(rng, program, data, specs)
    if batched is None:
      transform, needs_batch = "value", False
    else:
      bspecs, in_axes, size = batched
      out_axes = data.draw(st.sampled_from((0, -1)), label="out_axes") \
          if transform == "vmap" else 0
      detail = f"in_axes={in_axes}, out_axes={out_axes}, size={size}"
      specs = bspecs
  args = make_values(rng, specs)
  diff = program.diff

  def loss_of(api, f):
    return lambda *a: weighted_sum(api, f(*a))

  if transform == "value":
    fn = base
  elif transform == "vmap":
    def fn(api):
      return api.top.vmap(base(api), in_axes=in_axes, out_axes=out_axes)
  elif transform == "grad":
    def fn(api):
      return api.top.grad(loss_of(api, base(api)), argnums=diff)
  elif transform == "value_and_grad":
    def fn(api):
      return api.top.value_and_grad(loss_of(api, base(api)), argnums=diff)
  elif transform == "checkpoint_grad":
    def fn(api):
      return api.top.grad(loss_of(api, api.top.checkpoint(base(api))), argnums=diff)
  elif transform == "jacfwd":
    def fn(api):
      return api.top.jacfwd(loss_of(api, base(api)), argnums=diff)
  elif transform in ("jvp", "linearize", "jvp_of_grad"):
    tangents = _tangents(rng, program, args)

    def fn(api):
      f = base(api)

      def run(*a):
        with_diff, primals = _split_diff(program, a)
        if transform == "jvp":
          return api.top.jvp(with_diff(f), tuple(primals), tangents)
        if transform == "linearize":
          out, f_jvp = api.top.linearize(with_diff(f), *primals)
          return out, f_jvp(*tangents)
        g = api.top.grad(loss_of(api, with_diff(f)), argnums=tuple(range(len(primals))))
        return api.top.jvp(g, tuple(primals), tangents)
      return run
  elif transform == "vjp":
    def fn(api):
      f = base(api)

      def run(*a):
        with_diff, primals = _split_diff(program, a)
        out, pullback = api.top.vjp(with_diff(f), *primals)
        cts = api.top.tree_util.tree_map(
            lambda o: _weights(o.shape, o.dtype) if is_inexact(o.dtype)
            else np.zeros(o.shape, jax.dtypes.float0), out)
        return out, pullback(cts)
      return run
  elif transform == "vmap_grad":
    def fn(api):
      return api.top.vmap(api.top.grad(loss_of(api, base(api)), argnums=diff), in_axes=in_axes)
  elif transform == "jit_vmap_grad":
    def fn(api):
      return api.top.jit(api.top.vmap(api.top.grad(loss_of(api, base(api)), argnums=diff),
                                      in_axes=in_axes))
  elif transform == "grad_of_vmap":
    def fn(api):
      return api.top.grad(loss_of(api, api.top.vmap(base(api), in_axes=in_axes)), argnums=diff)
  elif transform == "vmap_jvp":
    unbatched = make_values(np.random.default_rng(seed + 1), program.specs)
    tangents = _tangents(rng, program, unbatched)

    def fn(api):
      f = base(api)

      def one(*a):
        with_diff, primals = _split_diff(program, a)
        return api.top.jvp(with_diff(f), tuple(primals), tangents)
      return api.top.vmap(one, in_axes=in_axes)
  else:
    raise AssertionError(transform)
  return Case(transform, fn, args, detail)


# --- running and comparing -------------------------------------------------------------------
_VALUE_TOLS = {F32: 2e-5, np.dtype(np.float64): 1e-12, BF16: 2e-2, F16: 4e-3}
_DERIV_TRANSFORMS = set(DIFF_TRANSFORMS)


def _tolerance(dtype, program: Program, transform: str) -> float:
  """By the output's dtype, or the least precise floating input's where that is coarser."""
  base = _VALUE_TOLS.get(np.dtype(dtype), 0.0)
  if base == 0.0:
    return 0.0
  for s in program.specs:
    if not s.is_python:
      base = max(base, _VALUE_TOLS.get(s.dtype, 0.0))
  scale = program.tol * (5.0 if transform in _DERIV_TRANSFORMS else 1.0)
  return base * scale


def _leaves(api, tree):
  return api.top.tree_util.tree_leaves(tree)


def assert_matches(actual, expected, program: Program, transform: str, what: str) -> None:
  """Same number of leaves, shapes, dtypes (and weak types); values within tolerance."""
  la, le = _leaves(REVAX, actual), _leaves(JAX, expected)
  assert len(la) == len(le), f"{what}: {len(la)} output leaves, JAX has {len(le)}"
  for k, (a, e) in enumerate(zip(la, le, strict=True)):
    where = f"{what}, output leaf {k}"
    assert tuple(a.shape) == tuple(e.shape), f"{where}: shape {a.shape} != JAX's {e.shape}"
    assert np.dtype(a.dtype) == np.dtype(e.dtype), f"{where}: dtype {a.dtype} != JAX's {e.dtype}"
    assert getattr(a, "weak_type", False) == getattr(e, "weak_type", False), \
        f"{where}: weak_type {getattr(a, 'weak_type', False)} != JAX's {e.weak_type}"
    av, ev = np.asarray(a), np.asarray(e)
    if ev.dtype == jax.dtypes.float0:
      continue
    tol = _tolerance(ev.dtype, program, transform)
    if tol == 0.0:
      np.testing.assert_array_equal(av, ev, err_msg=where)
      continue
    av, ev = av.astype(np.float64), ev.astype(np.float64)
    finite = np.isfinite(ev)
    scale = max(1.0, float(np.max(np.abs(ev[finite]), initial=0.0)))
    np.testing.assert_allclose(av, ev, rtol=tol, atol=tol * scale, err_msg=where)


def run_case(program: Program, data) -> None:
  """Draw a transformation and inputs for `program`; compare revax eager and jit with JAX."""
  seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
  case = make_case(program, data, seed)
  what = f"{program!r} under {case.transform} {case.detail}"
  # NumPy arguments become revax Arrays, so that operators (`x ** 2`, `a @ b`) dispatch to revax.
  eager_args = [rnp.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
  runs = (("revax eager", lambda: case.fn(REVAX)(*eager_args)),
          ("revax jit", lambda: revax.jit(case.fn(REVAX))(*case.args)))
  try:
    expected = jax.jit(case.fn(JAX))(*case.args)
  except _USER_ERRORS as e:
    # JAX rejects the program: revax must reject it too, with the same kind of error.
    kind = next(k for k in _USER_ERRORS if isinstance(e, k))
    for name, run in runs:
      try:
        run()
      except kind:
        continue
      except Exception as mine:  # noqa: BLE001
        raise AssertionError(f"{name}: {what}: JAX raised {type(e).__name__} ({e}), revax "
                             f"raised {type(mine).__name__} ({mine})") from mine
      raise AssertionError(f"{name}: {what}: JAX raised {type(e).__name__} ({e}), revax "
                           "returned a value")
    return
  for name, run in runs:
    assert_matches(run(), expected, program, case.transform, f"{name}: {what}")


_USER_ERRORS = (TypeError, ValueError, IndexError)

