"""Linear and logistic regression trained by hand-written gradient descent."""
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(42)
kx, kw, kn, kl = jax.random.split(key, 4)
n, d = 64, 3
X = jax.random.normal(kx, (n, d))
true_w = jnp.array([1.5, -2.0, 0.5])
y = X @ true_w + 0.3 + 0.1 * jax.random.normal(kn, (n,))

params = {"w": jnp.zeros(d), "b": 0.0}


def loss_fn(params, X, y):
  pred = X @ params["w"] + params["b"]
  residual = pred - y
  mse = jnp.mean(residual ** 2)
  return mse, {"max_err": jnp.max(jnp.abs(residual)), "pred_mean": pred.mean()}


@jax.jit
def update(params, X, y, lr=0.1):
  (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, X, y)
  params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
  return params, loss, aux


for step in range(30):
  params, loss, aux = update(params, X, y)
  if step % 10 == 0:
    print(f"step {step}: loss={loss:.5f} max_err={aux['max_err']:.4f}")

print("w:", params["w"])
print("b:", params["b"])
print("loss dtype:", loss.dtype, loss.shape, loss.weak_type)
print("grad of b weak:", jax.grad(lambda p: loss_fn(p, X, y)[0])(
    {"w": jnp.zeros(d), "b": 0.0})["b"])

# logistic regression on a linearly separable problem
labels = (X @ true_w > 0).astype(jnp.float32)


def bce(w, X, t):
  logits = X @ w
  return -jnp.mean(t * jax.nn.log_sigmoid(logits) + (1 - t) * jax.nn.log_sigmoid(-logits))


w = jnp.zeros(d)
grad_bce = jax.jit(jax.grad(bce))
for _ in range(50):
  w = w - 0.5 * grad_bce(w, X, labels)
acc = jnp.mean((jax.nn.sigmoid(X @ w) > 0.5) == labels)
print("logistic w:", w)
print("accuracy:", acc, acc.dtype)
print("loss:", bce(w, X, labels))
