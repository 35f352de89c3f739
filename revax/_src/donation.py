"""Buffer donation (`donate_argnums`), as data handed down a jit call: which flat operands are
donated, which result each may be written into, and the checks around a donating run.

As in JAX: the leaves of the positional arguments `donate_argnums` names are offered to XLA;
on one device each takes the first result of its shape and dtype not yet taken
(`tf.aliasing_output` on the parameter), over a mesh the first of its per-device shape (or,
with a result whose sharding XLA chooses, XLA reuses what it can); the others are named in a
warning. After a call, a donated Array whose buffer XLA reused is deleted (using it raises JAX's
RuntimeError); the same buffer passed both donated and as another argument is JAX's
JaxRuntimeError, raised before the program runs."""
from __future__ import annotations

import warnings

from revax._src import tree_util
from revax._src.core.errors import JaxRuntimeError
from revax._src.runtime import sharded as _rt_sharded
from revax._src.runtime.array import Array

__all__ = ["donated_operands", "donation_aliases", "mesh_donated", "run_donating"]


def donated_operands(donate_argnums, static_argnums, args, offset: int,
                     num_operands: int) -> list[int]:
  """The flat operands (after `offset` consts) holding leaves of the positional arguments that
  `donate_argnums` names, in a call on `args` of a function with `static_argnums`.

  Raises:
    ValueError: an argument both donated and static."""
  if not donate_argnums:
    return []
  nargs = len(args)
  donate = {i % nargs for i in donate_argnums if -nargs <= i < nargs}
  static = {i % nargs for i in static_argnums if -nargs <= i < nargs}
  if donate & static:
    raise ValueError(f"jit: donate_argnums {sorted(donate & static)} are also static arguments")
  flags = []
  for i, a in enumerate(args):
    if i not in static:
      flags += [i in donate] * len(tree_util.tree_leaves(a))
  return [offset + k for k, f in enumerate(flags[:num_operands - offset]) if f]


def donation_aliases(jaxpr, flagged) -> tuple:
  """(operand, result) pairs for a one-device call of `jaxpr` whose operands `flagged` (from
  `donated_operands`) are donated: each takes the first result of its shape and dtype not yet
  taken; a warning names those none can take."""
  free = [(k, (a.shape, a.dtype)) for k, a in enumerate(jaxpr.out_avals)]
  pairs, unused = [], []
  for k in flagged:
    aval = jaxpr.in_avals[k]
    match = next((f for f in free if f[1] == (aval.shape, aval.dtype)), None)
    if match is None:
      unused.append(f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]")
    else:
      free.remove(match)
      pairs.append((k, match[0]))
  if unused:
    warnings.warn(f"Some donated buffers were not usable: {', '.join(unused)}.")
  return tuple(pairs)


def _check_donated(aliases, operands) -> None:
  for k, _ in aliases:
    x = operands[k]
    buf = getattr(x, "_buf", None)
    for i, other in enumerate(operands):
      if i != k and (other is x or (buf is not None and getattr(other, "_buf", None) is buf)):
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the "
            f"same call to Execute() (flattened argument {max(k, i)}, first use: {min(k, i)}). "
            "Toy example for this bug: `f(donate(a), a)`.")


def _consume_donated(aliases, operands) -> None:
  for k, _ in aliases:
    x = operands[k]
    if type(x) is Array and x._buf is not None and _rt_sharded.consumed(x._buf):
      x.delete()


def run_donating(program, aliases, operands) -> list:
  """`program.run_unchecked(operands)` for a program compiled with `aliases`."""
  _check_donated(aliases, operands)
  outs = program.run_unchecked(operands)
  _consume_donated(aliases, operands)
  return outs


def mesh_donated(jaxpr, flagged, in_shardings, out_shardings) -> tuple:
  """The flat operands (consts first) of a call over a mesh that donation gives up, of those
  `flagged` (from `donated_operands`), as JAX decides: with a result whose sharding is left to
  XLA, every one of them (XLA reuses what it can); with every result's sharding given, those a
  result of the same per-device shape and dtype can take the place of (each result takes one;
  a warning names the others)."""
  if not flagged:
    return ()
  if any(s is None for s in out_shardings):
    return tuple(flagged)

  def local(aval, s):
    shape = aval.shape if s is None else s.shard_shape(aval.shape)
    return (tuple(shape), aval.dtype)
  free = [local(a, s) for a, s in zip(jaxpr.out_avals, out_shardings, strict=True)]
  out, unused = [], []
  for k in flagged:
    key = local(jaxpr.in_avals[k], in_shardings[k])
    if key in free:
      free.remove(key)
      out.append(k)
    else:
      unused.append(f"{key[1].name}[{','.join(map(str, key[0]))}]")
  if unused:
    warnings.warn(f"Some donated buffers were not usable: {', '.join(unused)}.")
  return tuple(out)
