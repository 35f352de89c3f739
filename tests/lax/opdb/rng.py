"""Op records for XLA's random-number ops. rng_bit_generator: the bits of each algorithm and
width against jax 0.10.2 (the reference: XLA's RngBitGenerator has no NumPy counterpart; both
libraries run the same XLA op). rng_uniform draws new numbers on every run, so its record
returns a deterministic function of the draw: floor((u - a) / (b - a)), zero wherever u lies
in [a, b)."""
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _key(rng):
  return rng.integers(0, 2 ** 32, size=4, dtype=np.uint64).astype(np.uint32)


def _jax_bits(shape, dtype, algorithm):
  def ref(key):
    import jax
    return np.asarray(jax.lax.rng_bit_generator(
        key, shape, dtype, jax.lax.RandomAlgorithm(int(algorithm)))[1])
  return ref


def _bits(shape, dtype, algorithm):
  return lambda key: lax.rng_bit_generator(key, shape, dtype, algorithm)[1]


def _bucket(a, b):
  u = lax.rng_uniform(a, b, (64,))
  return lax.floor((u - a) / (b - a))


RECORDS = [
    OpRecord(f"rng_bit_generator_{alg.name.lower()}_{np.dtype(dt).name}", "rng_bit_generator",
             _bits(shape, dt, alg), lambda rng: (_key(rng),), _jax_bits(shape, dt, alg),
             grad_order=0, vmap=False)  # (batched keys: JAX's rule, tested in test_rng.py)
    for alg, dt, shape in [(lax.RandomAlgorithm.RNG_DEFAULT, np.uint32, (3, 5)),
                           (lax.RandomAlgorithm.RNG_THREE_FRY, np.uint32, (7,)),
                           (lax.RandomAlgorithm.RNG_PHILOX, np.uint8, (2, 9)),
                           (lax.RandomAlgorithm.RNG_THREE_FRY, np.uint16, (5,))]
] + [
    OpRecord("rng_uniform_bucket", "rng_uniform", _bucket,
             args_of(rand((), low=-3.0, high=-1.0), rand((), low=1.0, high=3.0)),
             lambda a, b: np.zeros(64, np.float32), grad_order=0),
]
