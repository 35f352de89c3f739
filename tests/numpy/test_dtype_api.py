"""revax.numpy.result_type (and revax.dtypes.result_type) against jax's, over typed PRNG keys
(values, their dtypes, ShapeDtypeStructs of them), None, and mixes of them with numbers: keys
promote only with keys of their own impl (flax's `jnp.result_type(key_array)` in its linen
scan), None is the default float dtype, and every refusal is jax's exception type and message."""
import re

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from tests.numpy.helpers import jax, jnp

IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")


def _args(lib, case):
  """The arguments of case `case` built with `lib` (revax or jax)."""
  k = lambda impl="threefry2x32", n=None: (lib.random.key(0, impl=impl) if n is None else
                                           lib.random.split(lib.random.key(0, impl=impl), n))
  np_ = lib.numpy
  return {
      "key": lambda: (k(),), "keys": lambda: (k(n=3),), "keys twice": lambda: (k(n=3), k()),
      "three keys": lambda: (k(), k(n=2), k()),
      "key dtype": lambda: (k().dtype,), "key and its dtype": lambda: (k(), k().dtype),
      "key and float": lambda: (k(), 1.0), "key and int": lambda: (k(), 1),
      "key and float32": lambda: (k(), np_.float32), "key and array": lambda: (k(), np_.ones(2)),
      "float and key": lambda: (np_.ones(2, np_.int8), k()),
      "two impls": lambda: (k("rbg"), k()), "rbg": lambda: (k("rbg"),),
      "unsafe_rbg": lambda: (k("unsafe_rbg", 2),),
      "struct of keys": lambda: (lib.ShapeDtypeStruct((2,), k().dtype),),
      "struct and key": lambda: (lib.ShapeDtypeStruct((2,), k().dtype), k()),
      "none": lambda: (None,), "int8 and none": lambda: (np_.int8, None),
      "float16 and none": lambda: (np.float16, None), "int and none": lambda: (1, None),
      "python types": lambda: (int, float), "int8 and int": lambda: (np_.int8, int),
  }[case]()


CASES = ["key", "keys", "keys twice", "three keys", "key dtype", "key and its dtype",
         "key and float", "key and int", "key and float32", "key and array", "float and key",
         "two impls", "rbg", "unsafe_rbg", "struct of keys", "struct and key", "none",
         "int8 and none", "float16 and none", "int and none", "python types", "int8 and int"]


def _outcome(fn):
  try:
    return "value", repr(fn())
  except (TypeError, ValueError) as e:
    return type(e).__name__, str(e)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("where", ["numpy", "dtypes", "dtypes with flag"])
def test_result_type_matches_jax(case, where):
  # (jax.numpy.result_type takes no return_weak_type_flag; jax.dtypes.result_type does)
  kw = {"return_weak_type_flag": True} if where == "dtypes with flag" else {}
  fn = lambda lib: getattr(lib.numpy if where == "numpy" else lib.dtypes, "result_type")
  got = _outcome(lambda: fn(revax)(*_args(revax, case), **kw))
  want = _outcome(lambda: fn(jax)(*_args(jax, case), **kw))
  if case == "two impls":  # jax names either key dtype (the first of a set of the two)
    got, want = ((kind, re.sub("key<[a-z]+>", "key<...>", msg)) for kind, msg in (got, want))
  assert got == want


@pytest.mark.parametrize("impl", IMPLS)
def test_key_result_type_is_the_keys_dtype(impl):
  keys = revax.random.split(revax.random.key(1, impl=impl), 4)
  assert rnp.result_type(keys) == keys.dtype
  assert revax.jit(lambda k: (rnp.result_type(k) == keys.dtype, k)[1])(keys).dtype == keys.dtype
