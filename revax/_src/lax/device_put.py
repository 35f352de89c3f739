"""The device_put primitive: `revax.device_put` of traced values (under jit, grad, vmap).

Outside any transformation device_put moves buffers (api.py). Traced, it binds this primitive
with one entry per value in `devices` (the target Device, or None), `srcs` (the source, None
when unknown) and `copy_semantics` (may the result share the operand's buffer, must it copy,
or may it take the operand's buffer): JAX's params. In a program on one device placement is
the program's, so the lowering is the identity; the transpose moves the cotangents back (the
targets become the sources, and they always copy). A device may also be a memory space
(`revax.memory.Space.Host`) or a sharding naming a memory kind: the result is typed in that
memory (`f32<host>[4]`), as JAX's.

The primitive is one block: its wrapper, then its rules, then their registration.
"""
from __future__ import annotations

import enum

from revax._src.core import memory_space
from revax._src.core.avals import ShapedArray
from revax._src.core.memory_space import MemorySpace, mem_kind_to_space
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, memory_kinds, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["ArrayCopySemantics", "device_put_p", "bind_device_put"]


class ArrayCopySemantics(enum.Enum):
  """Whether a device_put result may share its operand's buffer (REUSE_INPUT), must be a copy
  (ALWAYS_COPY), or takes the operand's buffer (DONATE_INPUT), as JAX's."""
  ALWAYS_COPY = 0
  REUSE_INPUT = 1
  DONATE_INPUT = 2

  def __repr__(self):
    return f"ArrayCopySemantics.{self.name}"


def copy_semantics_of(donate: bool, may_alias) -> ArrayCopySemantics:
  """JAX's choice from device_put's `donate` and `may_alias`.

  Raises:
    ValueError: both are True.
  """
  if may_alias and donate:
    raise ValueError("may_alias and donate cannot be True at the same time.")
  if may_alias is None:
    may_alias = not donate
  if may_alias:
    return ArrayCopySemantics.REUSE_INPUT
  return ArrayCopySemantics.DONATE_INPUT if donate else ArrayCopySemantics.ALWAYS_COPY


# --- device_put ----------------------------------------------------------------------------------
def bind_device_put(xs, devices, srcs, copy_semantics):
  """device_put_p of the values `xs` (a list), one device, source and copy semantics each.

  Args:
    xs: the values (tracers, arrays, scalars).
    devices, srcs: one Device or None each.
    copy_semantics: one ArrayCopySemantics each.

  Returns:
    The list of results.

  Example:
    >>> from revax._src.lax.device_put import bind_device_put, ArrayCopySemantics
    >>> revax.make_jaxpr(lambda x: bind_device_put([x], [None], [None],
    ...                                            [ArrayCopySemantics.REUSE_INPUT]))(1.0)
    { lambda ; a:f32[]. let
        b:f32[] = device_put[
          copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)
          devices=(None,)
          srcs=(None,)
        ] a
      in (b,) }
  """
  return list(device_put_p.bind(*xs, devices=tuple(devices), srcs=tuple(srcs),
                                copy_semantics=tuple(copy_semantics)))


def _placed_aval(aval, device):
  """The type of a value put on `device`: in the memory space it names (a MemorySpace, or a
  sharding's memory kind), as JAX's `update_dp_aval`."""
  if not isinstance(aval, ShapedArray):
    return aval
  if isinstance(device, MemorySpace):
    return aval.update(memory_space=device)
  kind = getattr(device, "memory_kind", None)
  if kind is not None and hasattr(device, "device_set"):  # a sharding naming a memory
    return aval.update(memory_space=mem_kind_to_space(kind))
  return aval


def _device_put_abstract_eval(*xs, devices, srcs, copy_semantics):
  return [_placed_aval(x, d) for x, d in zip(xs, devices, strict=True)]


def _device_put_lower(ctx, *xs, devices, srcs, copy_semantics):
  """The identity; on TPU and GPU, in a program that names memories, a value put in a memory
  goes through `annotate_device_placement` (JAX's lowering there; XLA:CPU has no such target)."""
  if ctx.module.platform not in ("tpu", "gpu", "cuda", "rocm") or ctx.module.all_default_mem_kind:
    return list(xs)
  outs = []
  for x, d, aval in zip(xs, devices, ctx.avals_out, strict=True):
    kind = (memory_kinds._target_kind(d) if isinstance(d, MemorySpace)
            else getattr(d, "memory_kind", None) if hasattr(d, "device_set") else None)
    outs.append(x if kind is None else
                memory_kinds.annotate_placement(ctx.fb, x, kind, mlir.ir_type(aval)))
  return outs


def _device_put_jvp(primals, tangents, *, devices, srcs, copy_semantics):
  outs = device_put_p.bind(*primals, devices=devices, srcs=srcs, copy_semantics=copy_semantics)
  if all(type(t) is ad.Zero for t in tangents):
    return outs, list(tangents)
  t_outs = device_put_p.bind(*map(ad.instantiate_zeros, tangents), devices=devices, srcs=srcs,
                             copy_semantics=copy_semantics)
  return outs, t_outs


def _device_put_transpose(cts, *xs, devices, srcs, copy_semantics):
  """The cotangents go back where the operands came from, always copied (JAX's rule)."""
  results = [None] * len(cts)
  moved = []
  for i, (ct, x, device, src, cs) in enumerate(zip(cts, xs, devices, srcs, copy_semantics,
                                                   strict=True)):
    if not ad.is_undefined_primal(x):
      continue
    if type(ct) is ad.Zero:
      results[i] = ad.Zero(x.aval)
      continue
    if cs is ArrayCopySemantics.DONATE_INPUT:
      raise ValueError("donate=True is not allowed during tranposition of device_put. Please "
                       "file an issue if you want this to be supported.")
    if src is None:  # back to the operand's memory (JAX's rule names host memory only; it
      # leaves a device operand's cotangent in host memory, which its grad then refuses)
      space = getattr(x.aval, "memory_space", None)
      if space is MemorySpace.Host or (
          space is not None and getattr(getattr(ct, "aval", None), "memory_space", space)
          is not space):
        src = space
    moved.append((i, ct, device, src))
  if moved:
    index, cts_, devices_, srcs_ = zip(*moved)
    outs = device_put_p.bind(*cts_, devices=srcs_, srcs=devices_,
                             copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(moved))
    for i, y in zip(index, outs, strict=True):
      results[i] = y
  return results


def _device_put_batch(vals, dims, **params):
  return device_put_p.bind(*vals, **params), list(dims)


device_put_p = Primitive("device_put", multiple_results=True)
device_put_p.def_abstract_eval(_device_put_abstract_eval)
memory_space.own_rule.add(device_put_p)
mlir.register_lowering(device_put_p, _device_put_lower)
ad.primitive_jvps[device_put_p] = _device_put_jvp
ad.primitive_transposes[device_put_p] = _device_put_transpose
batching.primitive_batchers[device_put_p] = _device_put_batch
inv.definverse(device_put_p, lambda outs, ins, avals_in, **params: list(outs),
               inv.all_unknown_ok)
