"""lax.composite (a named operation with its decomposition) and lax.platform_dependent.

`composite(decomposition, name, version)` returns a function whose calls bind `composite_p`:
its params hold the decomposition traced at the arguments' types (constants hoisted into
leading operands), the name, the version and the keyword arguments as attributes. It lowers to
`stablehlo.composite` naming a private function that holds the decomposition (a compiler that
does not know the name runs that function), and evaluates the decomposition eagerly. As in JAX
it has no derivative rules (ValueError: give one with custom_jvp/custom_vjp). Under vmap, which
JAX does not support, the batched decomposition runs in place of the composite.

`platform_dependent(*args, cpu=..., cuda=..., default=...)` applies the branch of the platform
revax compiles for. revax runs one platform per process, known when the function is traced,
so only that branch is traced (JAX traces every branch and picks one when lowering).
"""
from __future__ import annotations

import numpy as np

from revax._src import tree_util
from revax._src.core.avals import get_aval
from revax._src.core.errors import UnexpectedTracerError
from revax._src.core.eval import eval_jaxpr
from revax._src.core.trace import Primitive, Tracer
from revax._src.interpreters import ad, batching, dispatch, mlir
from revax._src.interpreters import invertible as inv
from revax._src.lax.control_flow import common

__all__ = ["composite", "composite_p", "platform_dependent"]


class _HashableArray:
  """A NumPy array attribute, hashable by its bytes (params must be hashable)."""
  __slots__ = ("value",)

  def __init__(self, value):
    self.value = value

  def __hash__(self):
    return hash((self.value.shape, self.value.dtype.str, self.value.tobytes()))

  def __eq__(self, other):
    return (isinstance(other, _HashableArray) and self.value.shape == other.value.shape and
            self.value.dtype == other.value.dtype and
            bool(np.array_equal(self.value, other.value)))

  def __repr__(self):
    return repr(self.value)


def composite(decomposition, name, version=0):
  """A function that computes `decomposition` as one named op; as jax.lax.composite.

  Args:
    decomposition: the function defining the op's meaning; positional arguments are its
      inputs, keyword arguments its attributes (static values: scalars, strings, NumPy arrays;
      those that are None are left out of the lowered attributes).
    name: the op's name (e.g. "my.tangent").
    version: an int marking semantic changes.

  Returns:
    A function of the same arguments returning `decomposition`'s value.

  Example:
    >>> tangent = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")
    >>> tangent(jnp.array([0., 0.5]))
    Array([0.       , 0.5463025], dtype=float32)
  """
  def composite_fun(*args, **kwargs):
    if any(isinstance(v, Tracer) for v in tree_util.tree_leaves(kwargs)):
      raise UnexpectedTracerError(
          f"Found a traced value as an attribute of the composite op '{name}': attributes must "
          "be known at compile time (pass arrays as positional arguments, or use NumPy arrays)")
    leaves, in_tree = tree_util.tree_flatten(args)
    avals = [common.aval_of(x) for x in leaves]
    jaxpr, consts, out_tree = common.trace_flat(
        lambda flat: decomposition(*tree_util.tree_unflatten(in_tree, flat), **kwargs), avals)
    if any(isinstance(c, Tracer) for c in consts):
      raise UnexpectedTracerError(
          f"Found a traced value as a constant in the decomposition of the composite op "
          f"'{name}': the decomposition closes over a value of a transformation; pass it as an "
          "argument of the composite instead")
    closed, consts = common.hoist(jaxpr, consts)
    attributes = []
    for k, v in kwargs.items():
      v_leaves, v_tree = tree_util.tree_flatten(v)
      v_leaves = tuple(_HashableArray(x) if isinstance(x, np.ndarray) else x for x in v_leaves)
      attributes.append((k, v_leaves, v_tree))
    outs = composite_p.bind(*consts, *leaves, name=name, attributes=tuple(attributes),
                            version=int(version), jaxpr=closed)
    return tree_util.tree_unflatten(out_tree, outs)

  try:
    composite_fun.__name__ = getattr(decomposition, "__name__", "composite")
    composite_fun.__doc__ = getattr(decomposition, "__doc__", None)
  except (AttributeError, TypeError):
    pass
  return composite_fun


def _composite_abstract_eval(*avals, name, attributes, version, jaxpr):
  common.check_operands("composite", "decomposition", jaxpr.in_avals, avals)
  return list(jaxpr.out_avals)


def _composite_impl(*args, name, attributes, version, jaxpr):
  outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
  return [common.as_array(o, a) for o, a in zip(outs, jaxpr.out_avals, strict=True)]


def _composite_jvp(primals, tangents, **params):
  raise ValueError("JVP rule for composite not implemented. You can use `revax.custom_jvp` to "
                   "add support.")


def _composite_transpose(cts, *args, **params):
  raise ValueError("Transpose rule for composite not implemented. You can use "
                   "`revax.custom_jvp` or `revax.custom_vjp` to add support.")


def _composite_batch(axis_size, vals, dims, *, name, attributes, version, jaxpr):
  outs, out_dims = batching.batch_flat(
      lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), list(vals), list(dims), axis_size)
  return outs, out_dims


def _attribute_text(k, v) -> str:
  if isinstance(v, _HashableArray):
    v = v.value
    return f"{k} = {mlir.dense_attr(v, get_aval(v))}"
  if isinstance(v, (bool, np.bool_)):
    return f"{k} = {'true' if v else 'false'}"
  if isinstance(v, (int, np.integer)):
    return f"{k} = {int(v)} : i64"
  if isinstance(v, (float, np.floating)):
    return f"{k} = {float(v)!r} : f64"
  if isinstance(v, str):
    escaped = v.replace("\\", "\\\\").replace('"', '\\"')
    return f'{k} = "{escaped}"'
  raise TypeError(f"composite attribute {k}={v!r} of type {type(v).__name__} cannot be lowered: "
                  "attributes must be bools, ints, floats, strings or NumPy arrays")


def _composite_lower(ctx, *args, name, attributes, version, jaxpr):
  module = ctx.module
  fname = mlir.lower_function(module, module.fresh_func_name(name), jaxpr, public=False)
  attrs = []
  for k, leaves, tree in attributes:
    v = tree_util.tree_unflatten(tree, leaves)
    if v is not None:
      attrs.append(_attribute_text(k, v))
  escaped = name.replace("\\", "\\\\").replace('"', '\\"')
  return ctx.op("stablehlo.composite", list(args), ctx.avals_out,
                props={"composite_attributes": "{" + ", ".join(attrs) + "}",
                       "decomposition": f"@{fname}", "name": f'"{escaped}"',
                       "version": f"{version} : i32"})


composite_p = Primitive("composite", multiple_results=True)
composite_p.def_abstract_eval(_composite_abstract_eval)
dispatch.custom_impls[composite_p] = _composite_impl
ad.primitive_jvps[composite_p] = _composite_jvp
ad.primitive_transposes[composite_p] = _composite_transpose
batching.axis_size_batchers[composite_p] = _composite_batch
mlir.register_lowering(composite_p, _composite_lower)
inv.not_invertible(composite_p, "an opaque named op (no derivative rules either, as in JAX)")


# --- platform_dependent --------------------------------------------------------------------------
def platform_dependent(*args, default=None, **per_platform):
  """`per_platform[platform](*args)` for the platform revax compiles for; as
  jax.lax.platform_dependent.

  Args:
    *args: the branches' arguments (pytrees of arrays).
    default: the branch for a platform not named (optional).
    **per_platform: branches by platform name ('cpu', 'cuda', 'rocm', 'tpu').

  Returns:
    The chosen branch's value.

  Example:
    >>> lax.platform_dependent(jnp.array([0., 1.]), cpu=jnp.sin, default=jnp.cos)  # sin on CPU
    Array([0.        , 0.84147096], dtype=float32)
  """
  for pname, branch in per_platform.items():
    if not callable(branch):
      raise TypeError(f"lax.platform_dependent: the '{pname}' branch must be a callable.")
    if pname == "gpu":
      raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
  if default is not None and not callable(default):
    raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
  from revax._src.runtime.client import get_backend
  platform = get_backend().platform
  branch = per_platform.get(platform, default)
  if branch is None:
    raise NotImplementedError(f"lax.platform_dependent has no branch for platform '{platform}' "
                              f"(branches: {sorted(per_platform)}) and no default")
  return branch(*args)


