"""Slices with a negative step and a start or stop along symbolic dimensions, exported with
shape polymorphism, against jax 0.10.2's jax.export: the result's symbolic shape prints as
jax's and the values at several sizes are jax's (reads, and `.at[...]` updates through such a
slice)."""
import numpy as np
import pytest

import jax
import revax

SLICES = ["3:0:-1", "-2::-1", ":2:-1", "5::-2", "-1::-1", "1::-1", ":-3:-1", "-1:-4:-2",
          "2:-1:-1", "10:2:-3", "-1::-2", ":0:-1", "3::-1", "0::-1", "::-1", "::-3"]


def _outcome(lib, fn, spec, sizes):
  exported = lib.export.export(lib.jit(fn))(
      *[lib.ShapeDtypeStruct(lib.export.symbolic_shape(s), np.float32) for s in spec])
  values = []
  for size in sizes:
    args = [np.arange(np.prod(shape), dtype=np.float32).reshape(shape) for shape in size]
    values.append(np.asarray(exported.call(*args)).tolist())
  return str(exported.out_avals), values


@pytest.mark.parametrize("index", SLICES)
def test_negative_step_slice_of_a_symbolic_dimension(index):
  fn = lambda x: eval(f"x[{index}]")  # noqa: S307 - the index text is this file's
  sizes = [[(1,)], [(3,)], [(6,)], [(11,)]]
  assert _outcome(revax, fn, ["b"], sizes) == _outcome(jax, fn, ["b"], sizes)


@pytest.mark.parametrize("fn", [
    lambda x: x[:, 3:0:-1],
    lambda x: x[-2::-1, ::-2],
    lambda x: x[4:1:-2, 0],
    lambda x: x.at[3:0:-1].set(-1.0),
    lambda x: x.at[:, -1::-2].add(10.0),
    lambda x: x[None, 2::-1] * 2,
], ids=["cols", "rows and cols", "with an int", "set", "add", "newaxis"])
def test_in_two_dimensions_and_updates(fn):
  sizes = [[(2, 5)], [(5, 2)], [(7, 4)]]
  assert _outcome(revax, fn, ["b, c"], sizes) == _outcome(jax, fn, ["b, c"], sizes)


def test_symbolic_step_sign_must_be_known():
  """A symbolic start whose sign is unknown cannot be clamped: both refuse at export."""
  def outcome(lib):
    b, = lib.export.symbolic_shape("b")
    try:
      lib.export.export(lib.jit(lambda x: x[b - 3:0:-1]))(
          lib.ShapeDtypeStruct((b,), np.float32))
      return "ok"
    except Exception as e:  # noqa: BLE001
      return type(e).__name__
  assert outcome(revax) == outcome(jax)
