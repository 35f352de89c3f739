"""Op records for control flow: cond (closures, predicates away from 0 so finite differences never
flip a branch), switch (indices out of range are clamped), while_loop (reverse mode is undefined,
so no gradient suite; forward mode is checked in test_control_flow_ad.py), scan (a tanh RNN in
both directions, cumulative products), fori_loop (static bounds: a scan; bounds batched by the
vmap suite: a while loop with a batched predicate) and map. The vmap suite batches every operand
at every position, predicates and loop bounds included."""
import numpy as np

import revax.lax as lax
import revax.numpy as rnp
from tests.lax.op_db import OpRecord, args_of, rand


def _signed(shape, low=0.3, high=2.0):
  """Values with |x| in [low, high) and random signs (a predicate x > 0 is never near a tie)."""
  def make(rng):
    return (rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
  return make


def _cond_closure(p, x, w):
  return lax.cond(p > 0, lambda y: rnp.sin(y) * w, lambda y: rnp.cos(y) + w * y, x)


def _np_cond_closure(p, x, w):
  return np.sin(x) * w if p > 0 else np.cos(x) + w * x


def _switch3(i, x):
  return lax.switch(i, [rnp.sin, lambda y: rnp.cos(y) * y, rnp.tanh], x)


def _np_switch3(i, x):
  return [np.sin, lambda y: np.cos(y) * y, np.tanh][int(np.clip(i, 0, 2))](x)


def _while_growth(x):
  return lax.while_loop(lambda c: c < 5.0, lambda c: c * 1.7 + 0.2, x)


def _np_while_growth(x):
  c = np.float32(x)
  while c < 5.0:
    c = np.float32(c * np.float32(1.7) + np.float32(0.2))
  return c


def _while_counted(x):
  return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5 + rnp.sin(c[1])),
                        (0, x))[1]


def _np_while_counted(x):
  for _ in range(3):
    x = x * np.float32(1.5) + np.sin(x)
  return x


def _rnn(W, xs, h0, reverse=False):
  def step(h, x):
    h = rnp.tanh(W @ h + x)
    return h, h * 2.0
  h, hs = lax.scan(step, h0, xs, reverse=reverse)
  return hs + h


def _np_rnn(W, xs, h0, reverse=False):
  h, hs = h0, [None] * len(xs)
  order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
  for t in order:
    h = np.tanh(W @ h + xs[t])
    hs[t] = h * 2
  return np.stack(hs) + h


def _np_running_sum_carry(c0, xs):
  c, ys = c0.astype(np.float32), []
  for x in xs:
    ys.append(c * x)
    c = c + x * np.float32(2.0)
  return c.astype(np.float32), np.stack(ys).astype(np.float32)


def _cumprod(xs):
  return lax.scan(lambda c, x: (c * x, c * x), np.float32(1), xs)[1]


def _horner(x, coeffs):
  coeffs = rnp.asarray(coeffs)
  return lax.fori_loop(0, coeffs.shape[0], lambda i, acc: acc * x + coeffs[i], rnp.zeros_like(x))


def _np_horner(x, coeffs):
  acc = np.zeros_like(x)
  for c in coeffs:
    acc = acc * x + c
  return acc


def _fori_to_n(x, n):
  return lax.fori_loop(0, n, lambda i, acc: acc * x + 1.0, rnp.ones_like(x))


def _np_fori_to_n(x, n):
  acc = np.ones_like(x)
  for _ in range(int(n)):
    acc = acc * x + np.float32(1)
  return acc


RECORDS = [
    OpRecord("cond_closure", "cond", _cond_closure,
             args_of(_signed(()), rand((3,)), rand(())), _np_cond_closure),
    OpRecord("switch_three_branches_clamped", "cond", _switch3,
             args_of(rand((), np.int32, -1, 3), rand((4,))), _np_switch3, grad_order=1),
    OpRecord("while_batched_predicate", "while", _while_growth,
             args_of(rand((), low=0.1, high=3.0)), _np_while_growth, grad_order=0),
    OpRecord("while_counted_pytree_carry", "while", _while_counted, args_of(rand((2,))),
             _np_while_counted, grad_order=0, rtol=1e-5, atol=1e-5),
    OpRecord("scan_tanh_rnn", "scan", _rnn,
             args_of(rand((3, 3), low=-0.6, high=0.6), rand((4, 3)), rand((3,))), _np_rnn,
             rtol=1e-5, atol=1e-5),
    OpRecord("scan_tanh_rnn_reverse", "scan", lambda W, xs, h0: _rnn(W, xs, h0, True),
             args_of(rand((3, 3), low=-0.6, high=0.6), rand((4, 3)), rand((3,))),
             lambda W, xs, h0: _np_rnn(W, xs, h0, True), rtol=1e-5, atol=1e-5),
    OpRecord("scan_running_sum_carry", "scan",  # an invertible body: its carry can be undone
             lambda c0, xs: lax.scan(lambda c, x: (c + x * 2.0, c * x), c0, xs)[0],
             args_of(rand((3,)), rand((4, 3))), lambda c0, xs: _np_running_sum_carry(c0, xs)[0]),
    OpRecord("scan_cumprod", "scan", _cumprod, args_of(rand((5,), low=0.5, high=1.5)),
             lambda xs: np.cumprod(xs).astype(np.float32), rtol=1e-5),
    OpRecord("fori_horner_static", "scan", _horner, args_of(rand((2,)), rand((4,))),
             _np_horner, rtol=1e-5, atol=1e-5),
    OpRecord("fori_batched_bound", "while", _fori_to_n,
             args_of(rand((2,), low=-1.0, high=1.0), rand((), np.int32, 0, 4)), _np_fori_to_n,
             grad_order=0, rtol=1e-5),  # traced bounds (make_jaxpr of vjp): reverse mode raises
    OpRecord("map_sin_times", "scan", lambda xs: lax.map(lambda x: rnp.sin(x) * x, xs),
             args_of(rand((4, 2))), lambda xs: np.sin(xs) * xs),
]
