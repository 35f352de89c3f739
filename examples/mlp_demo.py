"""A small MLP forward pass, jitted: prints the StableHLO revax compiled and the result.

Run: python examples/mlp_demo.py
"""
import numpy as np

import revax
import revax.numpy as rnp


def init_params(sizes, seed=0):
  rng = np.random.default_rng(seed)
  return [(rng.standard_normal((m, n), np.float32) / np.sqrt(m), np.zeros(n, np.float32))
          for m, n in zip(sizes[:-1], sizes[1:])]


def mlp(params, x):
  for w, b in params[:-1]:
    x = rnp.tanh(x @ w + b)
  w, b = params[-1]
  return x @ w + b


def main():
  params = init_params([4, 8, 8, 2])
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
  forward = revax.jit(mlp)
  print("StableHLO compiled for mlp(params, x[3, 4]):\n")
  print(forward.lower(params, x).as_text())
  out = forward(params, x)
  print("output:", out, sep="\n")
  expected = x
  for w, b in params[:-1]:
    expected = np.tanh(expected @ w + b)
  expected = expected @ params[-1][0] + params[-1][1]
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)
  print("matches NumPy: yes")


if __name__ == "__main__":
  main()
