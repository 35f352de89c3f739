"""Random elementwise programs: expression trees over 1-3 broadcast-compatible arguments of mixed
dtypes (float32, bfloat16, float16, int32, Python scalars), through revax.numpy / revax.lax /
revax.nn and their JAX counterparts.

Functions with a restricted domain or a kink (log, sqrt, arcsin, abs, relu, maximum, floor, ...)
are applied only to raw arguments, whose values are drawn inside their domain and away from the
kink; inner nodes use functions smooth on the whole real line, so every derivative compared is
taken at a differentiable point.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.harness import (BF16, F16, F32, I32, PYFLOAT, PYINT, ArgSpec, Program,
                                default_diff)

# Leaf functions: name -> (domain of the argument, function of (api, x)).
LEAF_UNARY = {
    "identity": ("real", lambda api, x: x),
    "log": ("positive", lambda api, x: api.np.log(x)),
    "sqrt": ("positive", lambda api, x: api.np.sqrt(x)),
    "rsqrt": ("positive", lambda api, x: api.lax.rsqrt(api.np.asarray(x, np.float32))),
    "log1p": ("positive", lambda api, x: api.np.log1p(x)),
    "lgamma": ("positive", lambda api, x: api.lax.lgamma(api.np.asarray(x, np.float32))),
    "digamma": ("positive", lambda api, x: api.lax.digamma(api.np.asarray(x, np.float32))),
    "reciprocal": ("real", lambda api, x: api.np.reciprocal(api.np.asarray(x, np.float32))),
    "arcsin": ("unit", lambda api, x: api.np.arcsin(x)),
    "arccos": ("unit", lambda api, x: api.np.arccos(x)),
    "arctanh": ("unit", lambda api, x: api.np.arctanh(x)),
    "erf_inv": ("unit", lambda api, x: api.lax.erf_inv(api.np.asarray(x, np.float32))),
    "arccosh": ("ge1", lambda api, x: api.np.arccosh(x)),
    "exp": ("small", lambda api, x: api.np.exp(x)),
    "expm1": ("small", lambda api, x: api.np.expm1(x)),
    "exp2": ("small", lambda api, x: api.np.exp2(x)),
    "sinh": ("small", lambda api, x: api.np.sinh(x)),
    "cosh": ("small", lambda api, x: api.np.cosh(x)),
    "tan": ("small", lambda api, x: api.np.tan(x)),
    "abs": ("real", lambda api, x: api.np.abs(x)),
    "sign": ("real", lambda api, x: api.np.sign(x)),
    "relu": ("real", lambda api, x: api.nn.relu(x)),
    "relu6": ("real", lambda api, x: api.nn.relu6(x * 3.0)),
    "leaky_relu": ("real", lambda api, x: api.nn.leaky_relu(x, 0.1)),
    "elu": ("real", lambda api, x: api.nn.elu(x)),
    "hard_tanh": ("real", lambda api, x: api.nn.hard_tanh(x * 0.8)),
    "floor": ("real", lambda api, x: api.np.floor(x)),
    "ceil": ("real", lambda api, x: api.np.ceil(x)),
    "round": ("real", lambda api, x: api.np.round(x)),
    "cbrt": ("real", lambda api, x: api.np.cbrt(x)),
    "square_pow": ("real", lambda api, x: x ** 2),
    "cube_pow": ("real", lambda api, x: x ** 3),
    "pow_half": ("positive", lambda api, x: x ** 0.5),
}

# Leaf binary functions: name -> (domain of x, domain of y, function of (api, x, y)).
LEAF_BINARY = {
    "maximum": ("real", "real", lambda api, x, y: api.np.maximum(x, y)),
    "minimum": ("real", "real", lambda api, x, y: api.np.minimum(x, y)),
    "arctan2": ("real", "real", lambda api, x, y: api.np.arctan2(x, y)),
    "divide": ("real", "real", lambda api, x, y: x / y),
    "power": ("positive", "small", lambda api, x, y: api.np.power(x, y)),
    "remainder": ("real", "positive", lambda api, x, y: api.np.remainder(x, y)),
    "hypot": ("real", "real", lambda api, x, y: api.np.hypot(x, y)),
    "copysign": ("real", "real", lambda api, x, y: api.np.copysign(x, y)),
    "where_gt": ("real", "real", lambda api, x, y: api.np.where(x > y, x * 2.0, y - x)),
    "lax_max": ("real", "real", lambda api, x, y: api.lax.max(*_same(api, x, y))),
    "lax_pow": ("positive", "small", lambda api, x, y: api.lax.pow(*_same(api, x, y))),
}


def _same(api, x, y):
  """Operands of a lax binary op must share a dtype: promote as numpy would."""
  dtype = api.np.result_type(x, y)
  return api.np.asarray(x, dtype), api.np.asarray(y, dtype)


def _floating(api, x):
  """jax.nn's functions take floating inputs only: integer terms go in as float32."""
  return x if api.np.issubdtype(api.np.result_type(x), api.np.inexact) else \
      api.np.asarray(x, np.float32)


# Inner functions: defined and smooth on the whole real line.
INNER_UNARY = {
    "sin": lambda api, x: api.np.sin(x),
    "cos": lambda api, x: api.np.cos(x),
    "tanh": lambda api, x: api.np.tanh(x),
    "arctan": lambda api, x: api.np.arctan(x),
    "arcsinh": lambda api, x: api.np.arcsinh(x),
    "negative": lambda api, x: -x,
    "square": lambda api, x: api.np.square(x),
    "half": lambda api, x: x * 0.5,
    "sigmoid": lambda api, x: api.nn.sigmoid(_floating(api, x)),
    "softplus": lambda api, x: api.nn.softplus(_floating(api, x)),
    "gelu": lambda api, x: api.nn.gelu(_floating(api, x)),
    "silu": lambda api, x: api.nn.silu(_floating(api, x)),
    "erf": lambda api, x: api.lax.erf(api.np.asarray(x, np.float32)),
    "logistic": lambda api, x: api.lax.logistic(api.np.asarray(x, np.float32)),
    "exp_tanh": lambda api, x: api.np.exp(api.np.tanh(x)),
    "log1p_square": lambda api, x: api.np.log1p(x * x),
}

INNER_BINARY = {
    "add": lambda api, x, y: x + y,
    "subtract": lambda api, x, y: api.np.subtract(x, y),
    "multiply": lambda api, x, y: x * y,
    "logaddexp": lambda api, x, y: api.np.logaddexp(x, y),
    "soft_divide": lambda api, x, y: x / (1.5 + y * y),
}


@dataclasses.dataclass(frozen=True)
class Node:
  op: str  # "arg", a LEAF_UNARY/LEAF_BINARY/INNER_UNARY/INNER_BINARY name
  kids: tuple = ()
  arg: int = -1

  def build(self, api, args):
    if self.op == "arg":
      return args[self.arg]
    kids = [k.build(api, args) for k in self.kids]
    for table in (LEAF_UNARY, LEAF_BINARY):
      if self.op in table:
        return table[self.op][-1](api, *kids)
    table = INNER_UNARY if len(kids) == 1 else INNER_BINARY
    return table[self.op](api, *kids)

  def __str__(self):
    if self.op == "arg":
      return f"x{self.arg}"
    return f"{self.op}({', '.join(map(str, self.kids))})"


_DTYPES = (F32, F32, F32, F32, BF16, F16, I32, PYFLOAT, PYINT)


@st.composite
def arg_shapes(draw, num_args: int, max_rank: int = 3, max_dim: int = 4):
  """Shapes that broadcast together: suffixes of one base shape, some dims set to 1."""
  rank = draw(st.integers(0, max_rank), label="rank")
  base = tuple(draw(st.sampled_from((0,) + tuple(range(1, max_dim + 1)) * 4), label="dim")
               for _ in range(rank))
  shapes = []
  for _ in range(num_args):
    r = draw(st.integers(0, rank), label="arg rank")
    dims = base[rank - r:]
    shapes.append(tuple(1 if draw(st.integers(0, 3), label="to 1") == 0 else d for d in dims))
  return shapes


@st.composite
def elementwise_programs(draw):
  num_args = draw(st.integers(1, 3), label="number of arguments")
  shapes = draw(arg_shapes(num_args))
  dtypes = [draw(st.sampled_from(_DTYPES), label="dtype") for _ in range(num_args)]
  if all(isinstance(d, str) for d in dtypes):
    dtypes[0] = F32  # at least one array
  # Low-precision arguments stay small (their distinct values come from a coarse grid).
  shapes = [s[-2:] if d in (BF16, F16) else s for s, d in zip(shapes, dtypes, strict=True)]
  domains = ["real"] * num_args

  def leaf(i):
    """A raw argument, maybe through a leaf function (fixing the argument's domain)."""
    if domains[i] != "real" or dtypes[i] in (PYINT, I32):
      return Node("arg", arg=i)
    name = draw(st.sampled_from(sorted(LEAF_UNARY)), label="leaf function")
    domains[i] = LEAF_UNARY[name][0]
    node = Node("arg", arg=i)
    return node if name == "identity" else Node(name, (node,))

  terms = [leaf(i) for i in range(num_args)]
  if num_args >= 2 and draw(st.booleans(), label="leaf binary"):
    name = draw(st.sampled_from(sorted(LEAF_BINARY)), label="leaf binary function")
    dx, dy, _ = LEAF_BINARY[name]
    i, j = 0, 1
    if (dtypes[i] not in (PYINT, I32) and dtypes[j] not in (PYINT, I32)
        and terms[i].op == "arg" and terms[j].op == "arg"):
      domains[i], domains[j] = dx, dy
      terms = [Node(name, (terms[i], terms[j]))] + terms[2:]
  depth = draw(st.integers(0, 3), label="depth")
  for _ in range(depth):
    if len(terms) >= 2 and draw(st.booleans(), label="combine"):
      name = draw(st.sampled_from(sorted(INNER_BINARY)), label="inner binary")
      terms = [Node(name, (terms[0], terms[1]))] + terms[2:]
    else:
      name = draw(st.sampled_from(sorted(INNER_UNARY)), label="inner unary")
      terms[0] = Node(name, (terms[0],))
  while len(terms) > 1:
    name = draw(st.sampled_from(sorted(INNER_BINARY)), label="join")
    terms = [Node(name, (terms[0], terms[1]))] + terms[2:]
  root = terms[0]
  specs = tuple(ArgSpec(() if isinstance(d, str) else s, d, dom)
                for s, d, dom in zip(shapes, dtypes, domains, strict=True))

  def build(api):
    return lambda *args: root.build(api, args)

  lowp = any(d in (BF16, F16) for d in dtypes)
  return Program(str(root), build, specs, default_diff(specs), tol=2.0 if lowp else 1.0)
