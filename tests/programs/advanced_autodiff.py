"""The "Advanced automatic differentiation" tutorial: Hessian-vector products, Jacobians of
pytrees, stop_gradient in TD learning, per-example gradients, custom_vjp with nondiff_argnums
(a fixed point), and the errors of differentiating loops."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def f(x):
  return jnp.sum(jnp.tanh(x) ** 2 * jnp.arange(1.0, x.shape[0] + 1))


def hvp_fwd_over_rev(f, primals, tangents):
  return jax.jvp(jax.grad(f), primals, tangents)[1]


def hvp_rev_over_fwd(f, primals, tangents):
  g = lambda primals: jax.jvp(f, primals, tangents)[1]
  return jax.grad(g)(primals)


def hvp_rev_over_rev(f, primals, tangents):
  x, = primals
  v, = tangents
  return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)


x = jnp.array([0.1, -0.4, 0.7])
v = jnp.array([1.0, 2.0, -1.0])
print("hvp fwd-over-rev:", hvp_fwd_over_rev(f, (x,), (v,)))
print("hvp rev-over-fwd:", hvp_rev_over_fwd(f, (x,), (v,)))
print("hvp rev-over-rev:", hvp_rev_over_rev(f, (x,), (v,)))
print("hessian @ v:", jax.hessian(f)(x) @ v)
print("batched hvp:", jax.vmap(lambda u: hvp_fwd_over_rev(f, (x,), (u,)))(jnp.eye(3)))


# Jacobians of functions with pytree inputs and outputs
def predict(params, inputs):
  return {"out": jnp.tanh(inputs @ params["W"] + params["b"]), "norm": jnp.sum(params["W"] ** 2)}


params = {"W": jnp.array([[0.5, -0.2], [0.1, 0.3]]), "b": jnp.array([0.0, 0.1])}
inputs = jnp.array([[1.0, 2.0], [-1.0, 0.5], [0.3, 0.3]])
J = jax.jacrev(predict)(params, inputs)
print("jacrev tree:", jax.tree.map(jnp.shape, J))
Jf = jax.jacfwd(predict)(params, inputs)
print("jacfwd == jacrev:", jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.allclose(a, b, atol=1e-6)), J, Jf)))
print("d out[0] / d b:", J["out"]["b"][0])
print("jacrev argnums=1:", jax.jacrev(predict, argnums=1)(params, inputs)["norm"])
print("jacfwd has_aux:", jax.jacfwd(lambda z: (z ** 2, z.sum()), has_aux=True)(jnp.arange(2.0)))
print("hessian of pytree:", jax.tree.map(jnp.shape, jax.hessian(lambda p: predict(p, inputs)["out"].sum())(params)))


# stop_gradient: semi-gradient TD(0)
value_fn = lambda theta, state: jnp.dot(theta, state)
theta = jnp.array([0.1, -0.1, 0.0])
s_tm1, r_t, s_t = jnp.array([1.0, 2.0, -1.0]), jnp.array(1.0), jnp.array([2.0, 1.0, 0.0])


def td_loss(theta, s_tm1, r_t, s_t):
  v_tm1 = value_fn(theta, s_tm1)
  target = r_t + value_fn(theta, s_t)
  return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)


def td_loss_no_stop(theta, s_tm1, r_t, s_t):
  return -0.5 * ((r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)) ** 2)


print("td update:", jax.grad(td_loss)(theta, s_tm1, r_t, s_t))
print("without stop_gradient:", jax.grad(td_loss_no_stop)(theta, s_tm1, r_t, s_t))
print("straight-through:", jax.grad(lambda z: jnp.sum(z + jax.lax.stop_gradient(jnp.round(z) - z)))(jnp.array([0.3, 1.7])))

# per-example gradients
batched_s_tm1 = jnp.stack([s_tm1, s_tm1 * 2])
batched_r_t = jnp.stack([r_t, r_t - 1])
batched_s_t = jnp.stack([s_t, -s_t])
perex = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))
print("per-example:", perex(theta, batched_s_tm1, batched_r_t, batched_s_t))


# custom_vjp with a nondiff function argument: fixed-point iteration and implicit differentiation
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
  def cond_fun(carry):
    x_prev, x = carry
    return jnp.abs(x_prev - x) > 1e-6

  def body_fun(carry):
    _, x = carry
    return x, f(a, x)

  _, x_star = lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
  return x_star


def fixed_point_fwd(f, a, x_init):
  x_star = fixed_point(f, a, x_init)
  return x_star, (a, x_star)


def rev_iter(f, packed, u):
  a, x_star, x_star_bar = packed
  _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
  return x_star_bar + vjp_x(u)[0]


def fixed_point_rev(f, res, x_star_bar):
  a, x_star = res
  _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
  a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
  return a_bar, jnp.zeros_like(x_star)


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
  update = lambda a, x: 0.5 * (x + a / x)
  return fixed_point(update, a, a)


print("sqrt(2):", newton_sqrt(2.0))
print("grad sqrt(2):", jax.grad(newton_sqrt)(2.0), "exact:", 0.5 / jnp.sqrt(2.0))
print("vmap grad:", jax.vmap(jax.grad(newton_sqrt))(jnp.array([1.0, 4.0, 9.0])))
print("jit grad:", jax.jit(jax.grad(newton_sqrt))(16.0))

# differentiating loops: fori_loop with static trip count reverses, while_loop does not
print("grad fori static:", jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0))
try:
  jax.grad(lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0))(2.0)
except ValueError as e:
  print("grad of while_loop:", type(e).__name__, "Reverse-mode differentiation" in str(e))
print("jvp of while_loop:", jax.jvp(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1], (2.0,), (1.0,)))
try:
  jax.jit(jax.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)))(2.0, 3)
except ValueError as e:
  print("grad fori traced bound:", type(e).__name__)
print("jacrev of scan:", jax.jacrev(lambda x: lax.scan(lambda c, xi: (c * xi, c), 1.0, x)[1])(jnp.array([1.0, 2.0, 3.0])))


def scaled_by(y):
  fn, consts = jax.closure_convert(lambda t: t * y, 1.0)
  return fn(2.0, *consts)


print("closure_convert grad:", jax.grad(scaled_by)(3.0), jax.jit(scaled_by)(3.0))
