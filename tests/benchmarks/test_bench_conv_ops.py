"""benchmarks/bench_conv_ops.py times the convolutions of bench_conv's two programs one by one:
its table `CONVS` must be exactly the convolutions revax lowers those programs to, and its
program of one convolution must compute what jax's does."""
from __future__ import annotations

import importlib
import pathlib
import sys

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.runtime import im2col

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
  sys.path.insert(0, str(BENCHMARKS))
  try:
    yield importlib.import_module("bench_conv_ops"), importlib.import_module("bench_conv")
  finally:
    sys.path.remove(str(BENCHMARKS))


def _convs(text):
  out = []
  for line in text.split("\n"):
    if '"stablehlo.convolution"' in line:
      c = im2col.parse(line)
      assert c is not None, line
      m = c["match"]
      shape = lambda t: tuple(int(d) for d in t[len("tensor<"):].split("x")[:-1])
      out.append((shape(m["lt"]), shape(m["rt"]), tuple(c["stride"]),
                  tuple(zip(c["pad"], (int(p) for p in im2col._ints(m["padding"])[1::2]))),
                  tuple(c["ldil"]), tuple(c["rdil"]), c["groups"], 1))
  return out


def test_table_is_the_programs_convolutions(bench):
  ops, conv = bench
  lowered = []
  for make, batch in ((conv.train_step, conv.BATCH),
                      (conv.per_example_grads, conv.PER_EXAMPLE_BATCH)):
    images, labels = conv.data(batch, 1)
    lowered += _convs(make(revax, rnp).lower(conv.cnn_params(), images, labels).as_text())
  assert sorted(lowered) == sorted(ops.CONVS.values())


def test_one_convolution_matches_jax(bench):
  jax = pytest.importorskip("jax")
  ops, _ = bench
  f, args = ops.conv_program(revax, "pex_wgrad1")
  g, jargs = ops.conv_program(jax, "pex_wgrad1")
  np.testing.assert_allclose(np.asarray(f(*args)[0]), np.asarray(g(*jargs)[0]), rtol=1e-4,
                             atol=1e-3)
