"""The shape-polymorphism section of jax's export guide (symbolic shapes, calling an export at
several shapes and its shape checks, arithmetic and comparison of symbolic dimensions,
constraints and scopes, sizes as values, reshapes and slices of symbolic sizes) exercised in
this suite's own words: run with `jax` or `revax` as its argument, it prints one
`name: result` line per step (test_shape_poly_guide.py compares)."""
import sys, re
import numpy as np
if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
  from jax import export as E
else:
  import revax as lib
  import revax.numpy as lnp
  from revax import export as E

def show(name, fn):
  try:
    r = fn()
  except Exception as e:
    r = f"{type(e).__name__}: {e}"
  print(re.sub(r" at 0x[0-9a-f]+", "", f"{name}: {r}".replace("\n", " | ")))

def spec(shape, scope=None):
  """A float32 argument of the symbolic shape `shape` (a string, or a tuple of sizes)."""
  dims = E.symbolic_shape(shape, scope=scope) if isinstance(shape, str) else shape
  return lib.ShapeDtypeStruct(dims, np.float32)


def exported(fn, *specs, **jit_kwargs):
  return E.export(lib.jit(fn, **jit_kwargs))(*specs)


def ones(*shape):
  return np.ones(shape, np.float32)


def f(x):
  return lnp.sin(lnp.cos(x))
exp = exported(f, spec("b, 4"))
show("in_avals", lambda: exp.in_avals)
show("out_avals", lambda: exp.out_avals)
show("call 3", lambda: exp.call(np.ones((3, 4), np.float32)).shape)
show("call 7", lambda: exp.call(np.ones((7, 4), np.float32)).shape)
show("call bad", lambda: exp.call(np.ones((7, 5), np.float32)))
show("call rank", lambda: exp.call(np.ones((7,), np.float32)))
show("call dtype", lambda: exp.call(np.ones((7, 4), np.int32)))
show("symbolic_shape", lambda: E.symbolic_shape("b, 2*a + 1, ..."))
show("args specs", lambda: E.symbolic_args_specs((np.ones((3, 4)), np.ones(4)), "b, c"))
show("is_symbolic", lambda: (E.is_symbolic_dim(E.symbolic_shape("b")[0]), E.is_symbolic_dim(3)))
def concat(x, y):
  return lnp.concatenate([x, y], axis=0)
x_s, y_s = E.symbolic_shape("n, m"), E.symbolic_shape("k, m")
show("concat avals", lambda: exported(concat, spec(x_s), spec(y_s)).out_avals)
show("mixed scopes", lambda: exported(concat, spec("n, m"), spec("k, m")))
a, = E.symbolic_shape("a")
show("dim arith", lambda: (a + 1, 2 * a, a * a - 1, a // 2, a % 3, (2 * a + 4) // 2))
show("dim compare", lambda: (a >= 1, a > 0, a == a, a == a + 0, a != 3))
show("dim inconclusive", lambda: a >= 2)
show("int of dim", lambda: int(a))
def branch(x):
  return x if x.shape[0] >= 4 else lnp.zeros_like(x)
show("branch", lambda: exported(branch, spec("b")))
def mean0(x):
  return x.sum(axis=0) / x.shape[0]
e2 = exported(mean0, spec("b, 3"))
show("mean by size", lambda: (e2.out_avals, e2.call(np.arange(12, dtype=np.float32).reshape(4, 3))))
show("size as array", lambda: exported(lambda x: lnp.array(x.shape), spec("b, 3")).call(ones(5, 3)))
show("reshape flat", lambda: exported(lambda x: x.reshape(-1), spec("b, 3")).out_avals)
show("reshape uneven", lambda: exported(lambda x: x.reshape(2, -1), spec("b")))
show("even assertion",
     lambda: exported(lambda x: x.reshape(2, -1), spec("2*b")).call(ones(6)).shape)
show("even bad", lambda: exported(lambda x: x, spec("2*b")).call(ones(7)))
show("slice needs", lambda: exported(lambda x: x[:x.shape[0] - 2], spec("b")).out_avals)
scope = E.SymbolicScope(["b >= 16"])
bb, = E.symbolic_shape("b", scope=scope)
show("constraint", lambda: (bb >= 16, bb >= 10, bb - 16 >= 0))
show("constraint export", lambda: exported(lambda x: x[:16], spec((bb,))).out_avals)
show("constraint call bad", lambda: exported(lambda x: x[:16], spec((bb,))).call(ones(8)))
show("no constraint", lambda: exported(lambda x: x[:16] + 1, spec("b")).out_avals)
show("eq constraint", lambda: E.symbolic_shape("a, b", constraints=["a == 2*b"]))
show("bad constraint", lambda: E.symbolic_shape("a", constraints=["a > b ?"]))
show("scope mismatch", lambda: E.symbolic_shape("a")[0] + E.symbolic_shape("a")[0])
def lin(x):
  return lnp.linspace(0., 1., x.shape[0])
show("linspace", lambda: exported(lin, spec("n")))
show("static dim arg", lambda: exported(lambda x, n: x * n, spec("b"), E.symbolic_shape("c")[0],
                                        static_argnums=1))
show("grad of call", lambda: lib.grad(lambda x: exp.call(x).sum())(ones(3, 4)).shape)
show("vjp avals", lambda: exp.vjp().in_avals if hasattr(exp, 'vjp') else None)
show("disabled check", lambda: E.DisabledSafetyCheck.platform())
print("DONE")
