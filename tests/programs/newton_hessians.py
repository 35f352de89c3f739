"""Second-order tools: Newton's method on the Rosenbrock function with jax.hessian, Jacobians
forward and reverse, Hessian-vector products, linearize and vjp."""
import jax
import jax.numpy as jnp


def rosenbrock(x):
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


grad = jax.jit(jax.grad(rosenbrock))
hess = jax.jit(jax.hessian(rosenbrock))
x = jnp.array([0.8, 0.6, 0.5])  # far starts amplify float32 rounding
for i in range(8):
  step = jnp.linalg.solve(hess(x), grad(x))
  x = x - step
  print(f"newton {i}: f={rosenbrock(x):.6e}")
print("solution:", x)
print("hessian at solution:\n", hess(x))


def f(x):
  return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 + jnp.exp(x[1]), jnp.prod(x)])


x0 = jnp.array([0.5, 1.5])
Jf = jax.jacfwd(f)(x0)
Jr = jax.jacrev(f)(x0)
print("jacfwd:\n", Jf)
print("jacrev equal:", bool(jnp.allclose(Jf, Jr)))
print("jacobian of pytree:", jax.jacrev(lambda p: p["a"] * p["b"])({"a": jnp.ones(2), "b": jnp.arange(2.0)}))
print("jacfwd argnums:", jax.jacfwd(lambda a, b: a * b, argnums=(0, 1))(2.0, 3.0))

y, f_lin = jax.linearize(f, x0)
print("linearize:", y, f_lin(jnp.array([1.0, 0.0])))
y, f_vjp = jax.vjp(f, x0)
print("vjp:", f_vjp(jnp.array([1.0, 0.0, 0.0])))
y, ty = jax.jvp(f, (x0,), (jnp.array([0.0, 1.0]),))
print("jvp:", ty)


def hvp(f, x, v):
  return jax.jvp(jax.grad(f), (x,), (v,))[1]


v = jnp.array([1.0, 0.0, -1.0])
print("hvp:", hvp(rosenbrock, x, v), "vs", hess(x) @ v)
print("hessian of scalar fn:", jax.hessian(lambda t: t ** 3)(2.0))
print("grad of grad:", jax.grad(jax.grad(jnp.tanh))(0.3))
print("value_and_grad argnums:", jax.value_and_grad(lambda a, b: a * b ** 2, argnums=(0, 1))(3.0, 2.0))
print("holomorphic:", jax.grad(lambda z: z ** 2, holomorphic=True)(jnp.complex64(1 + 2j)))
print("jacrev of matrix fn:", jax.jacrev(lambda m: m @ m)(jnp.eye(2)).shape)
