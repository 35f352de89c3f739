"""Weak types through mutable array refs (revax/_src/lax/state.py's reads and write-backs,
interpreters/discharge.py's result types) against jax 0.10.2, generated over the family: refs
made weak or strong (float and int), written in every way (no write, a Python scalar, a strong
scalar, a value computed from a weak argument, `+=`, addupdate of weak and strong values) by
every construct that threads refs (plain code, cond with the writing branch taken or not,
switch, fori_loop, while_loop, scan, checkpoint, a jitted function closing over the ref or
taking it), the whole program run eagerly and under jit. Each case compares the reprs (value,
dtype, weak type) of what jax shows: the ref after the write, a read, the ref after the read,
and freeze eagerly; the read and freeze under jit.

jax's rules, which these pin down: a read returns the ref's type (a ref keeps the weak type it
was made with) and leaves the ref holding its contents in that type; a write holds the value
written (written values are cast strong); a loop, branch or jitted call hands the ref the
contents its discharged program computes, weak types as they are (a branch that does not write
returns the old contents); under jit a read returns the type of what was last written."""
import numpy as np
import pytest

import revax
import revax.numpy as rnp

jax = pytest.importorskip("jax")
jax.config.update("jax_platforms", "cpu")
jnp = jax.numpy

REVAX = (revax, rnp)
JAX = (jax, jnp)

INITS = {
    "weak_float": lambda np_: 1.0,
    "strong_float": lambda np_: np_.float32(1.0),
    "weak_int": lambda np_: 1,
    "strong_vector": lambda np_: np_.ones(2, np_.float32),
}


def _is_int(init):
  return init == "weak_int"


def _writer(api, np_, op, init):
  """write(r, p): the write `op` into ref r (p: a weakly typed traced or Python argument)."""
  dtype = np_.int32 if _is_int(init) else np_.float32
  py = 5 if _is_int(init) else 5.0

  def write(r, p):
    if op == "none":
      return
    vector = np_.ndim(r[...]) > 0
    if op == "set_literal":  # (a vector ref at an index: a Python scalar does not broadcast)
      if vector:
        r[1] = py
      else:
        r[...] = py
    elif op == "set_strong":
      r[...] = np_.full(r.shape, py, dtype)
    elif op == "set_computed":
      r[...] = r[...] * 0 + p * 2
    elif op == "add_literal":
      r[...] += py
    elif op == "addupdate_weak":
      api.ref.addupdate(r, (), np_.full(r.shape, py, dtype) if vector else py)
    elif op == "addupdate_strong":
      api.ref.addupdate(r, (), np_.full(r.shape, py, dtype))
  return write


OPS = ["none", "set_literal", "set_strong", "set_computed", "add_literal", "addupdate_weak",
       "addupdate_strong"]


def _threaded(api, np_, wrapper, write):
  """run(r, p): `write` done through the construct `wrapper`."""
  lax = api.lax

  def run(r, p):
    if wrapper == "plain":
      write(r, p)
    elif wrapper == "cond_taken":
      lax.cond(p > 0, lambda: write(r, p), lambda: None)
    elif wrapper == "cond_not_taken":
      lax.cond(p < 0, lambda: write(r, p), lambda: None)
    elif wrapper == "switch":
      lax.switch(1, [lambda: None, lambda: write(r, p)])
    elif wrapper == "fori":
      lax.fori_loop(0, 2, lambda i, c: (write(r, p), c)[1], 0)
    elif wrapper == "while":
      lax.while_loop(lambda i: i < 1, lambda i: (write(r, p), i + 1)[1], 0)
    elif wrapper == "scan":
      lax.scan(lambda c, x: (write(r, p), (c, None))[1], 0, None, length=2)
    elif wrapper == "checkpoint":
      api.checkpoint(lambda q: write(r, q))(p)
    elif wrapper == "jit_closure":
      api.jit(lambda q: write(r, q))(p)
    elif wrapper == "jit_argument":
      api.jit(lambda s, q: write(s, q))(r, p)
  return run


WRAPPERS = ["plain", "cond_taken", "cond_not_taken", "switch", "fori", "while", "scan",
            "checkpoint", "jit_closure", "jit_argument"]


def _observe(lib, init, op, wrapper, mode):
  api, np_ = lib
  write = _writer(api, np_, op, init)
  run = _threaded(api, np_, wrapper, write)
  p = 2 if _is_int(init) else 2.0
  if mode == "eager":
    r = api.new_ref(INITS[init](np_))
    run(r, p)
    after_write = repr(r)
    read = repr(r[...])
    return after_write, read, repr(r), repr(api.freeze(r))

  def program(q):
    r = api.new_ref(INITS[init](np_))
    run(r, q)
    return r[...], api.freeze(r)
  return tuple(map(repr, api.jit(program)(p)))


def _case(lib, init, op, wrapper, mode):
  try:
    return _observe(lib, init, op, wrapper, mode)
  except Exception as e:  # (a failure must be the same failure in both)
    return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_weak_types_through_refs_match_jax(wrapper, mode):
  bad = []
  for init in INITS:
    for op in OPS:
      got = _case(REVAX, init, op, wrapper, mode)
      want = _case(JAX, init, op, wrapper, mode)
      if got != want:
        bad.append(f"{init} {op}: revax {got} jax {want}")
  assert not bad, "\n".join(bad)


def test_cases_run():
  """The generated cases are programs jax runs (not errors compared as equal)."""
  for init in INITS:
    for op in OPS:
      for wrapper in ("plain", "cond_taken", "scan", "jit_argument"):
        for mode in ("eager", "jit"):
          assert isinstance(_case(JAX, init, op, wrapper, mode), tuple), (init, op, wrapper)
