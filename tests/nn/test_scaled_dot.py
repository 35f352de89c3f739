"""jax.nn's block-scaled dots on revax's backends, against jax on CPU: the configs, the
argument checks of scaled_matmul, the NotImplementedError
both raise when it is computed (JAX lowers it on GPUs only), and scaled_dot_general without
configs (a dot_general)."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import revax
import revax.numpy as rnp

F8, E8 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu


def _operands(b=1, m=4, n=8, k=64, block=32):
  return (np.ones((b, m, k), F8), np.ones((b, n, k), F8), np.ones((b, m, k // block), E8),
          np.ones((b, n, k // block), E8))


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_configs(mode):
  r, j = revax.nn.get_scaled_dot_general_config(mode), jax.nn.get_scaled_dot_general_config(mode)
  for field in ("mode", "block_size", "data_type", "scale_type", "infer_only"):
    assert getattr(r, field) == getattr(j, field), field
  if j.global_scale is None:
    assert r.global_scale is None
  else:
    np.testing.assert_array_equal(r.global_scale, j.global_scale)
    assert r.global_scale.dtype == j.global_scale.dtype
  assert repr(r).replace("revax", "jax").split("(")[0] == type(j).__name__
  for m in (revax, jax):
    with pytest.raises(ValueError, match="Unsupported mode"):
      m.nn.get_scaled_dot_general_config("int8")


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.float16])
def test_scaled_matmul_unavailable_on_cpu(dtype):
  """JAX lowers scaled_matmul on GPUs only: on CPU computing it raises NotImplementedError, in
  revax at the call (eagerly and while tracing), in JAX when it compiles."""
  ops = _operands()
  for m in (revax, jax):
    with pytest.raises(NotImplementedError, match="scaled_matmul"):
      np.asarray(m.nn.scaled_matmul(*ops, preferred_element_type=dtype))
  with pytest.raises(NotImplementedError, match="scaled_matmul"):
    np.asarray(jax.jit(jax.nn.scaled_matmul)(*ops))
  with pytest.raises(NotImplementedError, match="scaled_matmul"):
    revax.jit(revax.nn.scaled_matmul)(*ops)


BAD = {
    "rank": lambda a, b, sa, sb: (a[0], b, sa, sb),
    "contract": lambda a, b, sa, sb: (a, b[..., :32], sa, sb),
    "batch": lambda a, b, sa, sb: (a, np.concatenate([b, b]), sa, sb),
    "scale_contract": lambda a, b, sa, sb: (a, b, sa, sb[..., :1]),
    "scale_rows": lambda a, b, sa, sb: (a, b, sa[:, :2], sb),
}


@pytest.mark.parametrize("case", BAD)
def test_scaled_matmul_checks_like_jax(case):
  ops = BAD[case](*_operands())
  with pytest.raises(ValueError) as r:
    revax.nn.scaled_matmul(*ops)
  with pytest.raises(ValueError) as j:
    jax.nn.scaled_matmul(*ops)
  assert str(r.value) == str(j.value)


def test_scaled_dot_general():
  x, y = np.arange(12.0, dtype=np.float32).reshape(3, 4), np.ones((4, 5), np.float32)
  dn = (((1,), (0,)), ((), ()))
  for pet in (np.float32, None):
    r = revax.nn.scaled_dot_general(x, y, dn, preferred_element_type=pet)
    j = jax.nn.scaled_dot_general(jnp.asarray(x), jnp.asarray(y), dn, preferred_element_type=pet)
    assert r.dtype == j.dtype
    np.testing.assert_array_equal(r, j)
  with pytest.warns(DeprecationWarning, match="Backend selector"):
    revax.nn.scaled_dot_general(x, y, dn, implementation="cudnn")
  x, y = np.ones((4, 64), np.float32), np.ones((64, 8), np.float32)  # K: whole blocks
  cfg = [revax.nn.get_scaled_dot_general_config("mxfp8")] * 3
  with pytest.raises(NotImplementedError):
    revax.nn.scaled_dot_general(rnp.asarray(x), rnp.asarray(y), dn, configs=cfg)
  jcfg = [jax.nn.get_scaled_dot_general_config("mxfp8")] * 3
  with pytest.raises(NotImplementedError):
    jax.nn.scaled_dot_general(jnp.asarray(x), jnp.asarray(y), dn, configs=jcfg)
