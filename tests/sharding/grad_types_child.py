"""Run with 4 CPU devices as `grad_types_child.py jax|revax` (see test_grad_types.py): the types
of gradients of functions of split arrays (reductions, means, gathers, matmuls, softmax),
eagerly and jitted; each line is `name : type` or the exception."""
import sys

import numpy as np

if sys.argv[1] == "jax":
  import jax as lib, jax.numpy as lnp
else:
  import revax as lib, revax.numpy as lnp
S = lib.sharding; P = S.PartitionSpec; T = lib.typeof
def show(n, f):
  try: r = f()
  except Exception as e: r = f"{type(e).__name__}: {str(e)[:120]}"
  print(n, ":", r)
mesh = lib.make_mesh((2, 2), ("a", "b"))
def put(shape, spec):
  return lib.device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7,
                        S.NamedSharding(mesh, spec))
x, xa = put((8, 4), P("a", "b")), put((8, 4), P("a"))
w = put((4, 3), P())
i2 = np.array([0, 1])
with lib.set_mesh(mesh):
  cases = {
    "sum sq": lambda a: (a * a).sum(),
    "sum 0": lambda a: a.sum(0).sum(),
    "mean": lambda a: a.mean(),
    "max": lambda a: a.max(),
    "take cols": lambda a: a[:, i2].sum(),
    "matmul": lambda a: (a @ w).sum(),
    "tanh": lambda a: lnp.tanh(a).sum(),
    "exp": lambda a: lnp.exp(a).sum(),
    "slice": lambda a: a[2:6].sum(),
    "pad": lambda a: lnp.pad(a, ((2, 2), (0, 0))).sum(),
    "softmax": lambda a: lib.nn.softmax(a, axis=1).sum(),
    "logsumexp": lambda a: lib.nn.logsumexp(a, axis=1).sum(),
  }
  for n, f in cases.items():
    for nm, arr in (("x", x), ("xa", xa)):
      show(f"{n} {nm}", lambda: T(lib.grad(f)(arr)))
      show(f"{n} {nm} jit", lambda: T(lib.jit(lib.grad(f))(arr)))
print("GRAD_TYPES_DONE")
