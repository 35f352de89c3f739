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

def f(x):
  return lnp.sin(lnp.cos(x))
b_spec = lib.ShapeDtypeStruct(E.symbolic_shape("b, 4"), np.float32)
exp = E.export(lib.jit(f))(b_spec)
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
show("concat avals", lambda: E.export(lib.jit(concat))(lib.ShapeDtypeStruct(x_s, np.float32), lib.ShapeDtypeStruct(y_s, np.float32)).out_avals)
show("mixed scopes", lambda: E.export(lib.jit(concat))(lib.ShapeDtypeStruct(E.symbolic_shape("n, m"), np.float32), lib.ShapeDtypeStruct(E.symbolic_shape("k, m"), np.float32)))
a, = E.symbolic_shape("a")
show("dim arith", lambda: (a + 1, 2 * a, a * a - 1, a // 2, a % 3, (2 * a + 4) // 2))
show("dim compare", lambda: (a >= 1, a > 0, a == a, a == a + 0, a != 3))
show("dim inconclusive", lambda: a >= 2)
show("int of dim", lambda: int(a))
def branch(x):
  return x if x.shape[0] >= 4 else lnp.zeros_like(x)
show("branch", lambda: E.export(lib.jit(branch))(lib.ShapeDtypeStruct(E.symbolic_shape("b"), np.float32)))
def mean0(x):
  return x.sum(axis=0) / x.shape[0]
e2 = E.export(lib.jit(mean0))(lib.ShapeDtypeStruct(E.symbolic_shape("b, 3"), np.float32))
show("mean by size", lambda: (e2.out_avals, e2.call(np.arange(12, dtype=np.float32).reshape(4, 3))))
show("size as array", lambda: E.export(lib.jit(lambda x: lnp.array(x.shape)))(lib.ShapeDtypeStruct(E.symbolic_shape("b, 3"), np.float32)).call(np.ones((5, 3), np.float32)))
show("reshape flat", lambda: E.export(lib.jit(lambda x: x.reshape(-1)))(lib.ShapeDtypeStruct(E.symbolic_shape("b, 3"), np.float32)).out_avals)
show("reshape uneven", lambda: E.export(lib.jit(lambda x: x.reshape(2, -1)))(lib.ShapeDtypeStruct(E.symbolic_shape("b"), np.float32)))
show("even assertion", lambda: E.export(lib.jit(lambda x: x.reshape(2, -1)))(lib.ShapeDtypeStruct(E.symbolic_shape("2*b"), np.float32)).call(np.ones(6, np.float32)).shape)
show("even bad", lambda: E.export(lib.jit(lambda x: x))(lib.ShapeDtypeStruct(E.symbolic_shape("2*b"), np.float32)).call(np.ones(7, np.float32)))
show("slice needs", lambda: E.export(lib.jit(lambda x: x[:x.shape[0] - 2]))(lib.ShapeDtypeStruct(E.symbolic_shape("b"), np.float32)).out_avals)
scope = E.SymbolicScope(["b >= 16"])
bb, = E.symbolic_shape("b", scope=scope)
show("constraint", lambda: (bb >= 16, bb >= 10, bb - 16 >= 0))
show("constraint export", lambda: E.export(lib.jit(lambda x: x[:16]))(lib.ShapeDtypeStruct((bb,), np.float32)).out_avals)
show("constraint call bad", lambda: E.export(lib.jit(lambda x: x[:16]))(lib.ShapeDtypeStruct((bb,), np.float32)).call(np.ones(8, np.float32)))
show("no constraint", lambda: E.export(lib.jit(lambda x: x[:16] + 1))(lib.ShapeDtypeStruct(E.symbolic_shape("b"), np.float32)).out_avals)
show("eq constraint", lambda: E.symbolic_shape("a, b", constraints=["a == 2*b"]))
show("bad constraint", lambda: E.symbolic_shape("a", constraints=["a > b ?"]))
show("scope mismatch", lambda: E.symbolic_shape("a")[0] + E.symbolic_shape("a")[0])
def lin(x):
  return lnp.linspace(0., 1., x.shape[0])
show("linspace", lambda: E.export(lib.jit(lin))(lib.ShapeDtypeStruct(E.symbolic_shape("n"), np.float32)))
show("static dim arg", lambda: E.export(lib.jit(lambda x, n: x * n, static_argnums=1))(lib.ShapeDtypeStruct(E.symbolic_shape("b"), np.float32), E.symbolic_shape("c")[0]))
show("grad of call", lambda: lib.grad(lambda x: exp.call(x).sum())(np.ones((3, 4), np.float32)).shape)
show("vjp avals", lambda: exp.vjp().in_avals if hasattr(exp, 'vjp') else None)
show("disabled check", lambda: E.DisabledSafetyCheck.platform())
print("DONE")
