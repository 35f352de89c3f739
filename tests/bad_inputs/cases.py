"""The bad-input campaign's case format: one `Case` per malformed call.

A case is a function of an `Api` namespace (revax's or JAX's: `top`, `np`, `lax`, `nn`,
`random`), so the same malformed call runs through both. `check` asserts that revax raises the
expected exception type with a message containing the expected text, and -- where the case says
JAX is comparable -- that JAX raises the same kind of exception. Where JAX differs (it accepts
the input, returns a wrong value, crashes, or raises another type), `jax` says why in words.

Every case is tagged with a bad-input class (`KINDS`); `python -m tests.bad_inputs.table` prints
the per-area table kept in tests/README.md.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import pytest

import revax
import revax.lax as rlax
import revax.nn as rnn
import revax.numpy as rnp
import revax.random as rrandom

import jax  # the oracle: tests import it, revax never does
import jax.numpy as jnp

KINDS = {
    "non-callable": "a non-callable where a function goes",
    "non-array": "strings, None, objects, dicts where arrays go",
    "list-for-array": "Python lists/tuples where arrays go",
    "rank": "wrong rank or incompatible shapes",
    "dtype": "wrong or unsupported dtype",
    "axis": "out-of-range or repeated axes, dimensions, argnums",
    "size": "negative, fractional, NaN, huge sizes or counts",
    "empty": "empty shapes, zero-size dims, empty sequences",
    "nan-inf": "NaN/inf where a finite value is needed",
    "static": "unhashable or malformed static arguments",
    "pytree": "mismatched pytree structures",
    "arity": "wrong number of arguments",
    "callback": "user callbacks returning the wrong number/kind of outputs",
    "traced": "traced values where concrete ones are needed",
}


@dataclasses.dataclass(frozen=True)
class Api:
  name: str
  top: object
  np: object
  lax: object
  nn: object
  random: object


REVAX = Api("revax", revax, rnp, rlax, rnn, rrandom)
JAX = Api("jax", jax, jnp, jax.lax, jax.nn, jax.random)


@dataclasses.dataclass(frozen=True)
class Case:
  """A malformed call.

  Attributes:
    name: area/description, the test id.
    kind: the bad-input class (a key of KINDS).
    fn: api -> the call (it must raise).
    exc: the exception type revax raises.
    match: text the message must contain (a literal substring, not a regex).
    jax: True where JAX raises an exception of the same type; otherwise why it is not compared.
  """
  name: str
  kind: str
  fn: Callable
  exc: type
  match: str
  jax: bool | str = True

  def __str__(self):
    return self.name


def case(name, kind, fn, exc, match, jax=True) -> Case:
  assert kind in KINDS, kind
  assert jax is True or (isinstance(jax, str) and jax), "say why JAX is not compared"
  return Case(name, kind, fn, exc, match, jax)


def check(c: Case) -> None:
  """revax raises `c.exc` saying `c.match`; JAX (where comparable) raises the same type."""
  with pytest.raises(c.exc) as info:
    c.fn(REVAX)
  assert c.match in str(info.value), \
      f"{c.name}: message {str(info.value)!r} does not contain {c.match!r}"
  if c.jax is True:
    with pytest.raises(c.exc):
      c.fn(JAX)
