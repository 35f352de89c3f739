"""revax.example_libraries.optimizers against jax.example_libraries.optimizers: every optimizer's
trajectory over a nested pytree (eager and with a jitted update, scalar step sizes and
schedules), the schedules, l2_norm/clip_grads, state (un)packing, a jitted training loop, and
the error paths."""
import jax
import numpy as np
import pytest
from jax.example_libraries import optimizers as jax_opt

import revax
import revax.numpy as rnp
from revax.example_libraries import optimizers
from tests.platform_tolerances import allclose_tol

PARAMS = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
          "layers": [(np.ones(3, np.float32), np.float32(0.5))]}


def _grads(k):
  rng = np.random.default_rng(k)
  return {"w": rng.standard_normal((2, 3)).astype(np.float32),
          "layers": [(rng.standard_normal(3).astype(np.float32), np.float32(rng.standard_normal()))]}


def _assert_trees_close(actual, expected, tol=1e-6):
  la, ta = revax.tree_util.tree_flatten(actual)
  le, te = jax.tree_util.tree_flatten(expected)
  assert len(la) == len(le)
  for a, e in zip(la, le):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tol, atol=tol)


OPTIMIZERS = [
    ("sgd", (0.1,), {}), ("sgd", (optimizers.exponential_decay(0.1, 2, 0.5),),
                          {"jax_args": (jax_opt.exponential_decay(0.1, 2, 0.5),)}),
    ("momentum", (0.1, 0.9), {}), ("nesterov", (0.05, 0.8), {}), ("adagrad", (0.1,), {}),
    ("rmsprop", (0.01,), {}), ("rmsprop_momentum", (0.01,), {}), ("adam", (1e-2,), {}),
    ("adam", (optimizers.inverse_time_decay(1e-2, 2, 0.5),),
     {"jax_args": (jax_opt.inverse_time_decay(1e-2, 2, 0.5),)}),
    ("adam", (1e-3, 0.8, 0.99, 1e-6), {}), ("adamax", (1e-2,), {}),
]


@pytest.mark.parametrize("name,args,extra", OPTIMIZERS,
                         ids=[f"{o[0]}{i}" for i, o in enumerate(OPTIMIZERS)])
def test_trajectories_match_jax(name, args, extra):
  init, update, get_params = getattr(optimizers, name)(*args)
  j_init, j_update, j_get_params = getattr(jax_opt, name)(*extra.get("jax_args", args))
  jitted_update = revax.jit(update)
  eager, jitted, expected = init(PARAMS), init(PARAMS), j_init(PARAMS)
  j_update = jax.jit(j_update)
  for step in range(4):
    g = _grads(step)
    eager = update(step, g, eager)
    jitted = jitted_update(step, g, jitted)
    expected = j_update(step, g, expected)
    _assert_trees_close(get_params(eager), j_get_params(expected), 1e-5)
    _assert_trees_close(get_params(jitted), j_get_params(expected), 1e-5)
  assert revax.tree_util.tree_structure(get_params(eager)) == \
      revax.tree_util.tree_structure(PARAMS)


def test_state_is_a_pytree_of_the_per_leaf_states():
  init, update, get_params = optimizers.adam(1e-3)
  state = init(PARAMS)
  assert isinstance(state, optimizers.OptimizerState)
  leaves = revax.tree_util.tree_leaves(state)
  assert len(leaves) == 3 * len(revax.tree_util.tree_leaves(PARAMS))  # x, m, v per leaf
  packed, tree, subtrees = state  # unpacks like JAX's namedtuple
  assert len(packed) == len(subtrees) == 3


@pytest.mark.parametrize("make,args", [
    ("constant", (0.3,)), ("exponential_decay", (0.1, 3, 0.5)),
    ("inverse_time_decay", (0.1, 3, 0.5)), ("inverse_time_decay", (0.1, 3, 0.5, True)),
    ("polynomial_decay", (0.1, 5, 0.01, 2.0)),
    ("piecewise_constant", ([2, 5], [0.1, 0.05, 0.01])),
])
def test_schedules_match_jax(make, args):
  schedule, j_schedule = getattr(optimizers, make)(*args), getattr(jax_opt, make)(*args)
  steps = np.arange(8, dtype=np.int32)
  expected = [np.asarray(jax.jit(j_schedule)(i)) for i in steps]
  got = [np.asarray(schedule(int(i))) for i in steps]
  got_jit = [np.asarray(revax.jit(schedule)(i)) for i in steps[:3]]
  np.testing.assert_allclose(got, expected, **allclose_tol(rtol=1e-6))  # (pow: the chip's)
  np.testing.assert_allclose(got_jit, expected[:3], **allclose_tol(rtol=1e-6))


def test_make_schedule():
  assert optimizers.make_schedule(0.5)(3) == 0.5
  f = lambda i: 1.0 / (i + 1)
  assert optimizers.make_schedule(f) is f
  with pytest.raises(TypeError):
    optimizers.make_schedule(np.ones(2))


def test_piecewise_constant_errors():
  with pytest.raises(ValueError, match="boundaries length must be one shorter"):
    optimizers.piecewise_constant([1, 2], [0.1, 0.2])
  with pytest.raises(ValueError, match="boundaries and values must be sequences"):
    optimizers.piecewise_constant(1, [0.1, 0.2])


def test_l2_norm_and_clip_grads_match_jax():
  g = _grads(7)
  np.testing.assert_allclose(optimizers.l2_norm(g), jax_opt.l2_norm(g), rtol=1e-6)
  for max_norm in (0.5, 100.0):
    _assert_trees_close(optimizers.clip_grads(g, max_norm), jax_opt.clip_grads(g, max_norm))


def test_unpack_and_pack_round_trip():
  init, update, get_params = optimizers.momentum(0.1, 0.9)
  state = update(0, _grads(1), init(PARAMS))
  marked = optimizers.unpack_optimizer_state(state)
  assert isinstance(marked["w"], optimizers.JoinPoint)
  again = optimizers.pack_optimizer_state(marked)
  _assert_trees_close(get_params(again), get_params(state))
  _assert_trees_close(get_params(update(1, _grads(2), again)),
                      get_params(update(1, _grads(2), state)))
  with pytest.raises(TypeError, match="leaves are JoinPoints"):
    optimizers.pack_optimizer_state({"w": 1.0})


def test_mismatched_gradient_tree():
  init, update, _ = optimizers.sgd(0.1)
  with pytest.raises(TypeError, match="gradient tree that did not match the parameter tree"):
    update(0, {"w": PARAMS["w"]}, init(PARAMS))


def test_update_that_changes_state_structure_is_refused():
  @optimizers.optimizer
  def broken(step_size):
    return (lambda x: (x, x), lambda i, g, s: (s[0] - step_size * g,), lambda s: s[0])
  init, update, _ = broken(0.1)
  with pytest.raises(TypeError, match="produced an output structure that did not match"):
    update(0, PARAMS, init(PARAMS))


def test_jitted_training_loop_matches_jax():
  """Linear regression with adam: the whole step (loss, grad, update) jitted, as in JAX's
  examples; the trajectory equals jax's."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((16, 3)).astype(np.float32)
  y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)
  params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}

  def make_step(np_, grad, jit, opt):
    init, update, get_params = opt.adam(0.1)

    def loss(p):
      return np_.mean((x @ p["w"] + p["b"] - y) ** 2)

    @jit
    def step(i, state):
      return update(i, grad(loss)(get_params(state)), state)
    return init, step, get_params, loss

  r_init, r_step, r_get, r_loss = make_step(rnp, revax.grad, revax.jit, optimizers)
  j_init, j_step, j_get, j_loss = make_step(jax.numpy, jax.grad, jax.jit, jax_opt)
  r_state, j_state = r_init(params), j_init(params)
  for i in range(20):
    r_state, j_state = r_step(i, r_state), j_step(i, j_state)
  _assert_trees_close(r_get(r_state), j_get(j_state), 1e-4)
  assert float(r_loss(r_get(r_state))) < 0.5 * float(r_loss(params))
