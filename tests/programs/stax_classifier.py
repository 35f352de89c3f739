"""jax/examples/mnist_classifier.py on a small synthetic "MNIST": a stax convnet trained with
example_libraries.optimizers (momentum, then adam with a schedule), plus the other
optimizers and stax layers a user tries."""
import itertools

import numpy.random as npr

import jax
import jax.numpy as jnp
from jax import jit, grad, random
from jax.example_libraries import optimizers
from jax.example_libraries import stax
from jax.example_libraries.stax import Dense, Relu, LogSoftmax, Conv, MaxPool, Flatten

num_classes = 4
rng_data = npr.RandomState(0)
train_labels_int = rng_data.randint(0, num_classes, size=64)
prototypes = rng_data.randn(num_classes, 8, 8, 1).astype("float32")
train_images = prototypes[train_labels_int] + 0.3 * rng_data.randn(64, 8, 8, 1).astype("float32")
train_labels = jnp.eye(num_classes)[train_labels_int]


@jit
def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))


@jit
def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)


init_random_params, predict = stax.serial(
    Conv(4, (3, 3), padding="SAME"), Relu,
    MaxPool((2, 2), strides=(2, 2)),
    Flatten,
    Dense(16), Relu,
    Dense(num_classes), LogSoftmax)

rng = random.key(0)
step_size = 0.05
num_epochs = 3
batch_size = 16
momentum_mass = 0.9
num_train = train_images.shape[0]
num_complete_batches, leftover = divmod(num_train, batch_size)
num_batches = num_complete_batches + bool(leftover)


def data_stream():
  rng = npr.RandomState(0)
  while True:
    perm = rng.permutation(num_train)
    for i in range(num_batches):
      batch_idx = perm[i * batch_size:(i + 1) * batch_size]
      yield train_images[batch_idx], train_labels[batch_idx]


batches = data_stream()
opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)


@jit
def update(i, opt_state, batch):
  params = get_params(opt_state)
  return opt_update(i, grad(loss)(params, batch), opt_state)


out_shape, init_params = init_random_params(rng, (-1, 8, 8, 1))
print("output shape:", out_shape)
print("param shapes:", jax.tree.map(jnp.shape, init_params))
opt_state = opt_init(init_params)
itercount = itertools.count()
print("initial accuracy:", accuracy(init_params, (train_images, train_labels)))
for epoch in range(num_epochs):
  for _ in range(num_batches):
    opt_state = update(next(itercount), opt_state, next(batches))
  params = get_params(opt_state)
  train_acc = accuracy(params, (train_images, train_labels))
  print(f"Epoch {epoch} loss {loss(params, (train_images, train_labels)):.4f} accuracy {train_acc:.3f}")

# other optimizers from the same family, a few jitted steps each on a small dense model
init_small, predict_small = stax.serial(Flatten, Dense(num_classes), LogSoftmax)
_, small_params = init_small(random.key(1), (-1, 8, 8, 1))
batch = (train_images[:16], train_labels[:16])
small_loss = lambda p, b: -jnp.mean(jnp.sum(predict_small(p, b[0]) * b[1], axis=1))
small_grad = jit(grad(small_loss))
for name, opt in [("sgd", optimizers.sgd(0.1)),
                  ("nesterov", optimizers.nesterov(0.05, 0.9)),
                  ("adagrad", optimizers.adagrad(0.05)),
                  ("rmsprop", optimizers.rmsprop(0.01)),
                  ("rmsprop_momentum", optimizers.rmsprop_momentum(0.01)),
                  ("adam", optimizers.adam(optimizers.exponential_decay(0.01, 10, 0.5))),
                  ("adamax", optimizers.adamax(0.01)),
                  ("sm3", optimizers.sm3(0.05))]:
  o_init, o_update, o_get = opt
  state = o_init(small_params)
  for i in range(3):
    state = jit(o_update)(i, small_grad(o_get(state), batch), state)
  print(f"{name}: loss {small_loss(o_get(state), batch):.4f}")

schedules = [optimizers.constant(0.1), optimizers.exponential_decay(0.1, 5, 0.5),
             optimizers.inverse_time_decay(0.1, 5, 0.5, staircase=True),
             optimizers.polynomial_decay(0.1, 10, 0.01, power=2.0),
             optimizers.piecewise_constant([3, 6], [0.1, 0.01, 0.001])]
print("schedules:", [[round(float(s(i)), 5) for i in (0, 4, 8)] for s in schedules])
g = jit(grad(loss))(init_params, batch)
print("l2_norm:", optimizers.l2_norm(g))
print("clip_grads:", optimizers.l2_norm(optimizers.clip_grads(g, 0.1)))
packed = optimizers.unpack_optimizer_state(opt_state)
print("unpack/pack:", type(packed).__name__,
      jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)),
                                get_params(optimizers.pack_optimizer_state(packed)), get_params(opt_state))))

# more stax: parallel branches, FanOut / FanInSum / FanInConcat, BatchNorm, Dropout, pooling
init_fun, apply_fun = stax.serial(
    stax.FanOut(2),
    stax.parallel(stax.serial(Dense(5), stax.Tanh), stax.serial(Dense(3), stax.Gelu)),
    stax.FanInConcat(),
    Dense(2))
shape, p = init_fun(random.key(1), (3, 4))
print("fan-in concat:", shape, jit(apply_fun)(p, jnp.ones((3, 4)))[0])
init_fun, apply_fun = stax.serial(stax.FanOut(2), stax.parallel(Dense(4), stax.Identity), stax.FanInSum)
shape, p = init_fun(random.key(2), (2, 4))
print("residual:", shape, jit(apply_fun)(p, jnp.arange(8.0).reshape(2, 4))[1])
init_fun, apply_fun = stax.serial(Conv(2, (2, 2)), stax.BatchNorm(axis=(0, 1, 2)), stax.Elu,
                                  stax.AvgPool((2, 2)), stax.SumPool((1, 1)), Flatten, stax.Softplus)
shape, p = init_fun(random.key(3), (2, 5, 5, 1))
print("batchnorm net:", shape, jit(apply_fun)(p, train_images[:2, :5, :5])[0, :3])
init_fun, apply_fun = stax.Dropout(0.5, mode="train")
_, p = init_fun(random.key(4), (4, 4))
print("dropout train:", apply_fun(p, jnp.ones((4, 4)), rng=random.PRNGKey(5)))
print("dropout test:", stax.Dropout(0.5, mode="test")[1]((), jnp.ones(3), rng=random.PRNGKey(5)))
print("leaky/selu:", stax.leaky_relu(jnp.array([-1.0, 1.0])), stax.selu(jnp.array([-1.0, 1.0])))
