"""The jit primitive: a call of a traced program (`jaxpr`, closed-over values as leading
operands) with every transformation's rule. Outside any transformation its eager rule runs the
compiled program (program_cache.py), over the mesh its shardings or operands name when they do
(sharded_jit.call_sharded); inside one (grad, vmap, an outer jit) each transformation interprets
it with its rule below.

A jit equation of a function jitted with in_shardings/out_shardings carries them as params
`in_shardings` / `out_shardings`: one sharding (or None: unspecified) per operand / result.
Both are absent when nothing was specified, so unsharded programs are unchanged. Every rule
keeps them matched to its new operands and results (as JAX's jit primitive does): JVP tangents
take their primal's sharding, residuals are unspecified, a transpose's cotangents take the
sharding of the value they are the cotangent of, and vmap leaves the batch dimension unsplit
(split over vmap's spmd_axis_name when it has one). Eagerly such a call runs over the
shardings' mesh; nested in another program it constrains its operands and results there."""
from __future__ import annotations

from revax._src.core.eval import eval_jaxpr
from revax._src.core.jaxpr import ClosedJaxpr, pp_forwarding_params, pp_leading_params
from revax._src.core.trace import Primitive, _context, eval_trace
from revax._src.interpreters import ad, batching, dispatch, mlir, partial_eval, staging
from revax._src.interpreters import discharge, transpose
from revax._src.lax import prng_keys
from revax._src.lax import state as _state
from revax._src.donation import run_donating
from revax._src.runtime import array as _array
from revax._src.program_cache import program_for
from revax._src.runtime import sharded as _rt_sharded
from revax._src.sharded_jit import call_sharded

__all__ = ["jit_p", "bind_jit", "shard_params", "run_with_refs"]


jit_p = Primitive("jit", multiple_results=True)
pp_forwarding_params[jit_p] = "jaxpr"  # (printed as JAX prints a jit call: `name=` first, the
pp_leading_params[jit_p] = ("name",)  # body's binders named as the call's operands and results)


def _jit_abstract_eval(*avals, jaxpr: ClosedJaxpr, name: str, **shardings):
  dispatch.check_arg_avals(name, jaxpr.in_avals, avals)
  return discharge.result_avals(jaxpr)


def shard_params(in_shardings, out_shardings) -> dict:
  """The params of a jit equation for these per-operand / per-result shardings."""
  if all(s is None for s in in_shardings) and all(s is None for s in out_shardings):
    return {}
  return {"in_shardings": tuple(in_shardings), "out_shardings": tuple(out_shardings)}


def _pick(values, mask, keep=True) -> list:
  return [v for v, m in zip(values, mask, strict=True) if bool(m) == keep]


def _call_on_key_data(program, jaxpr: ClosedJaxpr, args) -> list:
  """An eager jit equation on concrete keys (EagerKeys: a jitted sampler that takes key-typed
  values, evaluated by an eager scan or vmap): the program on their data (keys lower to their
  data), its key-typed results wrapped again."""
  program.check_avals([dispatch.get_aval(a) for a in args])
  outs = program.run_unchecked([a.data if type(a) is prng_keys.EagerKeys else a for a in args])
  return [prng_keys.EagerKeys(o, aval.dtype._impl) if prng_keys.is_key_aval(aval) else o
          for o, aval in zip(outs, jaxpr.out_avals, strict=True)]


def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, in_shardings=None, out_shardings=None,
              compiler_options=()):
  if in_shardings is None and not _rt_sharded.any_sharded(args):
    program = program_for(jaxpr, name, (), compiler_options)
    if any(type(a) is prng_keys.EagerKeys for a in args):
      return _call_on_key_data(program, jaxpr, args)
    return program.call_arrays(args)
  if compiler_options:
    raise NotImplementedError(f"jit(compiler_options=...) of {name} over a mesh: revax hands "
                              "XLA options to one-device programs only")
  return call_sharded(jaxpr, name, args, in_shardings, out_shardings)


def _jit_lower(ctx, *args, jaxpr: ClosedJaxpr, name: str, in_shardings=None,
               out_shardings=None, compiler_options=()):
  # (compiler_options: never in a staged program, see _check_staged)
  if in_shardings is None:
    return mlir.call_jaxpr(ctx, jaxpr, args, name)
  from revax._src.lax.sharding_constraint import constrain
  args = [x if s is None else constrain(ctx, x, s, a)
          for x, s, a in zip(args, in_shardings, ctx.avals_in, strict=True)]
  outs = mlir.call_jaxpr(ctx, jaxpr, args, name)
  return [x if s is None else constrain(ctx, x, s, a)
          for x, s, a in zip(outs, out_shardings, ctx.avals_out, strict=True)]


def bind_jit(closed: ClosedJaxpr, args, name: str, in_shardings=None, out_shardings=None,
             compiler_options=()):
  """Bind jit_p on `closed`, turning its constants into leading operands (jit jaxprs have none).
  `in_shardings`/`out_shardings` (per argument in `args` / per result, or None) become params,
  as do XLA `compiler_options` ((name, value) pairs) where there are some."""
  params = {}
  if in_shardings is not None:
    params = shard_params([None] * len(closed.consts) + list(in_shardings), out_shardings)
  if compiler_options:
    params["compiler_options"] = compiler_options
  if closed.consts:
    jaxpr = ClosedJaxpr(staging.convert_constvars_jaxpr(closed.jaxpr), [])
    return jit_p.bind(*closed.consts, *args, jaxpr=jaxpr, name=name, **params)
  return jit_p.bind(*args, jaxpr=closed, name=name, **params)


def _jit_jvp(primals, tangents, *, jaxpr, name, in_shardings=None, out_shardings=None,
             compiler_options=()):
  ins = outs = None
  if in_shardings is not None:
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    _, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    ins = list(in_shardings) + _pick(in_shardings, nonzeros)
    outs = list(out_shardings) + _pick(out_shardings, out_nonzeros)
  return ad.call_jvp(jaxpr, primals, tangents,  # (the call keeps its name, as JAX's)
                     lambda jvp_closed, args: bind_jit(jvp_closed, args, name, ins, outs,
                                                       compiler_options))


def _jit_partial_eval(trace, args, params, unknowns):
  """Run the known part of the call now and stage the unknown part, as two jit calls."""
  split = None
  if "in_shardings" in params:
    base = {k: params[k] for k in ("name", "compiler_options") if k in params}
    ins, outs = params["in_shardings"], params["out_shardings"]

    def split(out_unknowns, num_res):  # residuals: unspecified
      known = shard_params(_pick(ins, unknowns, False),
                            _pick(outs, out_unknowns, False) + [None] * num_res)
      unknown = shard_params([None] * num_res + _pick(ins, unknowns),
                              _pick(outs, out_unknowns))
      return {**base, **known}, {**base, **unknown}
  return partial_eval.partial_eval_call(
      trace, jit_p, args, params, unknowns, split_params=split,
      bind_known=lambda known, known_args, kp: bind_jit(
          known, known_args, kp["name"], kp.get("in_shardings"), kp.get("out_shardings"),
          kp.get("compiler_options", ())))


def _jit_transpose(cts, *args, jaxpr, name, in_shardings=None, out_shardings=None,
                   compiler_options=()):
  linear_mask = tuple(ad.is_undefined_primal(a) for a in args)
  ct_closed = transpose.transpose_jaxpr(jaxpr, linear_mask)
  nonlinear = [a for a in args if not ad.is_undefined_primal(a)]
  cts = [ad.instantiate_zeros(c) for c in cts]
  ins = outs = None
  if in_shardings is not None:  # a cotangent is laid out as the value it belongs to
    ins = _pick(in_shardings, linear_mask, False) + list(out_shardings)
    outs = _pick(in_shardings, linear_mask)
  lin_cts = iter(bind_jit(ct_closed, nonlinear + cts, name, ins, outs,
                          compiler_options))
  return [next(lin_cts) if lin else None for lin in linear_mask]


def _batched_sharding(s, d, spmd_axis_name=None):
  """`s` for the value batched at `d`: the batch dimension unsplit, or split over vmap's
  `spmd_axis_name` (a spec that already uses those axes is JAX's DuplicateSpecError)."""
  if s is None or d is batching.not_mapped or not hasattr(s, "spec"):
    return s  # SingleDeviceSharding: still whole on its device
  parts = list(s.spec)
  parts[len(parts):d] = [None] * (d - len(parts))
  parts.insert(d, spmd_axis_name)
  return type(s)(s.mesh, type(s.spec)(*parts))


def _jit_batch(axis_size, vals, dims, *, jaxpr, name, in_shardings=None, out_shardings=None,
               compiler_options=()):
  batched, out_dims = batching.batch_jaxpr(jaxpr, dims, axis_size)
  ins = outs = None
  if in_shardings is not None:
    spmd = batching.batching_spmd_axis_name()
    ins = [_batched_sharding(s, d, spmd) for s, d in zip(in_shardings, dims, strict=True)]
    outs = [_batched_sharding(s, d, spmd)
            for s, d in zip(out_shardings, out_dims, strict=True)]
  return (bind_jit(batched, list(vals), name, ins, outs, compiler_options),
          list(out_dims))


_dce_call = staging.dce_call()


def _jit_dce(eqn, used_outputs):
  used_inputs, new = _dce_call(eqn, used_outputs)
  if new is not None and "in_shardings" in eqn.params:
    params = {k: v for k, v in new.params.items() if not k.endswith("_shardings")}
    params.update(shard_params(_pick(eqn.params["in_shardings"], used_inputs),
                                _pick(eqn.params["out_shardings"], used_outputs)))
    new = new.replace(params=params)
  return used_inputs, new


def _check_staged(params):
  """As JAX: XLA options belong to the program a top-level jit compiles; a jit staged into
  another program (an outer jit, make_jaxpr, grad's linearization, a loop body) cannot have
  them."""
  if params.get("compiler_options"):
    raise ValueError(f"`compiler_options` can only be passed to top-level `jax.jit`. Got "
                     f"compiler_options={dict(params['compiler_options'])} specified on a "
                     f"nested jit with name: {params['name']}")


jit_p.def_abstract_eval(_jit_abstract_eval)
staging.staging_checks[jit_p] = _check_staged
dispatch.custom_impls[jit_p] = _jit_impl  # a jit call always runs compiled
mlir.register_lowering(jit_p, _jit_lower)
staging.dce_rules[jit_p] = _jit_dce
ad.primitive_jvps[jit_p] = _jit_jvp
partial_eval.partial_eval_rules[jit_p] = _jit_partial_eval
ad.primitive_transposes[jit_p] = _jit_transpose
batching.axis_size_batchers[jit_p] = _jit_batch


def run_with_refs(entry, operands) -> list:
  """Run trace-cache `entry` (whose program takes mutable array refs) on `operands`: the refs'
  contents are read, the discharged program runs on them (as a jit call under another
  transformation), and the new contents it returns are written back into the refs."""
  if _context.trace is not eval_trace and discharge.passes_refs_on(entry.jaxpr.jaxpr):
    # a custom_vjp function inside takes the refs themselves (its bwd writes into them during
    # a backward pass yet to come): the program runs inline, its refs staying refs
    return eval_jaxpr(entry.jaxpr.jaxpr, entry.jaxpr.consts, *operands)
  refs = [x for x, m in zip(operands, entry.ref_mask) if m]
  pure = discharge.discharge_state(entry.jaxpr)
  n = len(entry.jaxpr.out_avals)
  if (_context.trace is eval_trace and not _rt_sharded.any_sharded(operands)
          and not _array.any_committed(operands)):
    # eagerly, a ref's buffer is donated to the call when no one else holds its contents:
    # XLA writes the new contents into it (JAX's in/out aliases of ref arguments)
    donate = not any(r._shared for r in refs)
    positions = [k for k, m in enumerate(entry.ref_mask) if m]
    aliases = tuple((k, n + j) for j, k in enumerate(positions)) if donate else ()
    vals = [x._value if m else x for x, m in zip(operands, entry.ref_mask)]
    program = program_for(pure, entry.name, aliases)
    outs = run_donating(program, aliases, vals) if aliases else program.call_arrays(vals)
    for ref, new in zip(refs, outs[n:], strict=True):
      ref._value, ref._shared = new, False
    return outs[:n]
  vals = [_state.ref_get(x) if m else x for x, m in zip(operands, entry.ref_mask)]
  outs = jit_p.bind(*vals, jaxpr=pure, name=entry.name)
  positions = [k for k, m in enumerate(entry.ref_mask) if m]
  for ref, k, new in zip(refs, positions, outs[n:], strict=True):
    if discharge.writes_ref(entry.jaxpr.jaxpr, k):
      _state.write_back(ref, new)
  return outs[:n]
