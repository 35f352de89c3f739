"""Minimal optimizers over pytrees, as jax.example_libraries.optimizers.

An optimizer is a triple `(init_fun, update_fun, get_params)`:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)
    opt_state = opt_update(step, grads, opt_state)   # under jit, step may be traced
    params = get_params(opt_state)

Each optimizer is written for one array (its per-leaf state is a small tuple of arrays) and the
`optimizer` decorator lifts it to pytrees of parameters: the state is an `OptimizerState`, a
pytree whose leaves are the per-leaf states' arrays, so it passes through jit, vmap and
device_put like any pytree. Step sizes are scalars or schedules (functions of the step index).
"""
from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import numpy as np

from revax._src import tree_util
from revax._src.numpy import contractions, creation, reductions, shape_ops, ufuncs

__all__ = [
  "Optimizer", "OptimizerState", "optimizer", "sgd", "momentum", "nesterov", "adagrad",
  "rmsprop", "rmsprop_momentum", "adam", "adamax", "constant", "exponential_decay",
  "inverse_time_decay", "polynomial_decay", "piecewise_constant", "make_schedule", "l2_norm",
  "clip_grads", "JoinPoint", "sm3", "unpack_optimizer_state", "pack_optimizer_state",
]

# The state of a pytree of parameters: the flattened per-leaf states (`packed_state`, one list
# of arrays per parameter leaf), the parameters' tree structure, and each per-leaf state's.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
with warnings.catch_warnings():  # optree notes that namedtuples are nodes already: this
  warnings.simplefilter("ignore")  # registration replaces that (tree structures are not leaves)
  tree_util.register_pytree_node(
      OptimizerState,
      lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
      lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Schedule = Callable[[Any], Any]
# the type names jax's optimizers module annotates with
Array = Any
Step = int
Params = Any
Updates = Params
State = Any
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
  """The `(init_fn, update_fn, params_fn)` triple of an optimizer."""
  init_fn: Callable
  update_fn: Callable
  params_fn: Callable


def optimizer(opt_maker):
  """Decorator: lift an optimizer written for single arrays to pytrees of parameters.

  Args:
    opt_maker: a function returning `(init, update, get_params)` where `init(x0) -> state`,
      `update(i, g, state) -> state` and `get_params(state) -> x` act on one array (a state is
      a pytree of arrays, e.g. a tuple).

  Returns:
    A function with opt_maker's signature returning an `Optimizer` whose functions act on
    pytrees of parameters and an `OptimizerState`.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, tree = tree_util.tree_flatten(x0_tree)
      flat = [tree_util.tree_flatten(init(x0)) for x0 in x0_flat]
      return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
      if grad_tree_def != tree:
        raise TypeError(f"optimizer update function was passed a gradient tree that did not match "
                        f"the parameter tree structure with which it was initialized: parameter "
                        f"tree {tree} and grad tree {grad_tree_def}.")
      states = [tree_util.tree_unflatten(s, leaves)
                for s, leaves in zip(subtrees, states_flat, strict=True)]
      new_flat = [tree_util.tree_flatten(update(i, g, state))
                  for g, state in zip(grad_flat, states, strict=True)]
      for subtree, (_, subtree2) in zip(subtrees, new_flat, strict=True):
        if subtree2 != subtree:
          raise TypeError(f"optimizer update function produced an output structure that did not "
                          f"match its input structure: input {subtree} and output {subtree2}.")
      return OptimizerState([f[0] for f in new_flat], tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      params = [get_params(tree_util.tree_unflatten(s, leaves))
                for s, leaves in zip(subtrees, states_flat, strict=True)]
      return tree_util.tree_unflatten(tree, params)

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


# --- optimizers ----------------------------------------------------------------------------------
@optimizer
def sgd(step_size):
  """Stochastic gradient descent: x <- x - step_size(i) * g.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.

  Returns:
    An (init_fun, update_fun, get_params) triple.

  Example:
    >>> from revax.example_libraries import optimizers
    >>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
    >>> state = opt_init({'w': jnp.zeros(2)})
    >>> state = opt_update(0, {'w': jnp.ones(2)}, state)  # step 0, gradients 1
    >>> get_params(state)['w']
    Array([-0.1, -0.1], dtype=float32)
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0

  def update(i, g, x):
    return x - step_size(i) * g

  def get_params(x):
    return x

  return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size, mass: float):
  """SGD with momentum: v <- mass * v + g; x <- x - step_size(i) * v.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    mass: the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def nesterov(step_size, mass: float):
  """SGD with Nesterov momentum: v <- mass * v + g; x <- x - step_size(i) * (mass * v + g).

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    mass: the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (with momentum on the normalized gradient).

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    momentum: the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0), creation.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + ufuncs.square(g)
    g_sq_inv_sqrt = ufuncs.where(g_sq > 0, 1. / ufuncs.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: x <- x - step_size(i) * g / sqrt(avg(g^2) + eps).

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    gamma: the decay of the running average of squared gradients.
    eps: added under the square root.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + ufuncs.square(g) * (1. - gamma)
    return x - step_size(i) * g / ufuncs.sqrt(avg_sq_grad + eps), avg_sq_grad

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp with momentum on the normalized step.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    gamma: the decay of the running average of squared gradients.
    eps: added under the square root.
    momentum: the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0), creation.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + ufuncs.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / ufuncs.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam: bias-corrected running averages of the gradient and its square.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    b1: the decay of the first moment estimate.
    b2: the decay of the second moment estimate.
    eps: added to the root of the second moment.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0), creation.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m  # first moment estimate
    v = (1 - b2) * ufuncs.square(g) + b2 * v  # second moment estimate
    mhat = m / (1 - creation.asarray(b1, m.dtype) ** (i + 1))  # bias corrections
    vhat = v / (1 - creation.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * mhat / (ufuncs.sqrt(vhat) + eps), m, v

  def get_params(state):
    return state[0]

  return init, update, get_params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax: Adam with an infinity-norm second moment.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    b1: the decay of the first moment estimate.
    b2: the decay of the weighted infinity norm.
    eps: added to the norm.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, creation.zeros_like(x0), creation.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = ufuncs.maximum(b2 * u, ufuncs.abs(g))
    x = x - (step_size(i) / (1 - creation.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
    return x, m, u

  def get_params(state):
    return state[0]

  return init, update, get_params



@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al., "Memory-Efficient Adaptive Optimization"): Adagrad whose accumulator
  is covered by one vector per axis (memory O(sum of dims) instead of O(prod)), with momentum.

  Args:
    step_size: a positive scalar, or a schedule mapping the step index to one.
    momentum: the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def along(ndim, v, axis):  # v as an array that varies along `axis` only
    return shape_ops.expand_dims(v, tuple(a for a in range(ndim) if a != axis)) if ndim > 1 else v

  def init(x0):
    x_shape = tuple(np.shape(x0)) if not hasattr(x0, "shape") else tuple(x0.shape)
    x0 = shape_ops.atleast_1d(x0)
    vs = [creation.zeros(n, dtype=x0.dtype) for n in x0.shape]
    return x0, creation.zeros_like(x0), vs, x_shape

  def update(i, g, state):
    x, m, vs, x_shape = state
    g = shape_ops.reshape(g, x.shape)
    covers = [along(g.ndim, v, axis) for axis, v in enumerate(vs)]
    accum = ufuncs.add(functools.reduce(ufuncs.minimum, covers), ufuncs.square(g))
    accum_inv_sqrt = ufuncs.where(accum > 0, 1. / ufuncs.sqrt(accum), 0)
    m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [reductions.max(accum, axis=tuple(a for a in range(x.ndim) if a != axis))
          for axis in range(x.ndim)]
    return x, m, vs, x_shape

  def get_params(state):
    x, _, _, x_shape = state
    return shape_ops.reshape(x, x_shape)

  return init, update, get_params

# --- schedules -----------------------------------------------------------------------------------
def constant(step_size) -> Schedule:
  """The schedule that is `step_size` at every step."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
  """step_size * decay_rate ** (i / decay_steps)."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
  """step_size / (1 + decay_rate * i / decay_steps) (floored ratio with `staircase`)."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * ufuncs.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
  """From step_size to final_step_size over decay_steps, as (1 - i / decay_steps) ** power."""
  def schedule(step_num):
    step_num = ufuncs.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries, values) -> Schedule:
  """values[k] for steps in (boundaries[k-1], boundaries[k]]; len(values) == len(boundaries) + 1."""
  boundaries = creation.array(boundaries)
  values = creation.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[reductions.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
  """A schedule from a scalar (constant) or a schedule itself; TypeError otherwise."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if np.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# --- utilities -----------------------------------------------------------------------------------
def l2_norm(tree):
  """The l2 norm of a pytree of arrays (all leaves together)."""
  leaves = tree_util.tree_leaves(tree)
  return ufuncs.sqrt(sum(contractions.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Scale a pytree of gradients down to l2 norm `max_norm` if it is larger."""
  norm = l2_norm(grad_tree)
  return tree_util.tree_map(lambda g: ufuncs.where(norm < max_norm, g, g * (max_norm / norm)),
                            grad_tree)


# --- serialization -------------------------------------------------------------------------------
class JoinPoint:
  """Marks the boundary between the parameter pytree and a leaf's state pytree."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):  # pytrees of arrays look iterable
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An OptimizerState as the parameters' pytree with a `JoinPoint` (holding that leaf's state)
  at each leaf, for serialization."""
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = [tree_util.tree_unflatten(s, leaves)
              for s, leaves in zip(subtree_defs, states_flat, strict=True)]
  return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
  """The inverse of `unpack_optimizer_state`."""
  sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise TypeError("pack_optimizer_state expects a pytree whose leaves are JoinPoints")
  flat = [tree_util.tree_flatten(s.subtree) for s in sentinels]
  return OptimizerState([f[0] for f in flat], tree_def, tuple(f[1] for f in flat))
