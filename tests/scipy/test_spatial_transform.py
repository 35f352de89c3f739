"""revax.scipy.spatial.transform (Rotation, Slerp) against jax.scipy.spatial.transform: every
conversion, composition, application, mean and interpolation, with grad, vmap and jit."""
import jax
import numpy as np
import pytest

import revax
from revax.scipy.spatial import transform as rt
from jax.scipy.spatial import transform as jt

RNG = np.random.RandomState(0)
QUAT = RNG.randn(5, 4).astype(np.float32)
VEC = RNG.randn(5, 3).astype(np.float32)


def _close(r, j, atol=2e-6):
  r, j = np.asarray(r), np.asarray(j)
  assert r.shape == j.shape and r.dtype == j.dtype, (r.shape, j.shape, r.dtype, j.dtype)
  np.testing.assert_allclose(r, j, rtol=2e-5, atol=atol)


CONVERSIONS = [
    ("as_matrix", lambda m: m.Rotation.from_quat(QUAT).as_matrix()),
    ("from_matrix", lambda m: m.Rotation.from_matrix(m.Rotation.from_quat(QUAT).as_matrix()).quat),
    ("from_matrix_each_branch", lambda m: m.Rotation.from_matrix(np.stack([
        np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0]),
        np.eye(3)]).astype(np.float32)).quat),
    ("as_rotvec", lambda m: m.Rotation.from_quat(QUAT).as_rotvec()),
    ("as_rotvec_degrees_small", lambda m: m.Rotation.from_rotvec(VEC * 1e-4).as_rotvec(True)),
    ("from_rotvec", lambda m: m.Rotation.from_rotvec(VEC).quat),
    ("from_rotvec_degrees", lambda m: m.Rotation.from_rotvec(VEC * 50, degrees=True).quat),
    ("mrp", lambda m: m.Rotation.from_mrp(m.Rotation.from_quat(QUAT).as_mrp()).quat),
    ("as_quat", lambda m: m.Rotation.from_quat(-QUAT).as_quat(canonical=True, scalar_first=True)),
    ("compose_inv", lambda m: (m.Rotation.from_quat(QUAT) * m.Rotation.from_quat(QUAT[::-1]).inv()
                               ).quat),
    ("apply", lambda m: m.Rotation.from_quat(QUAT).apply(VEC)),
    ("apply_inverse_broadcast", lambda m: m.Rotation.from_quat(QUAT[0]).apply(VEC, inverse=True)),
    ("magnitude", lambda m: m.Rotation.from_quat(QUAT).magnitude()),
    ("concatenate", lambda m: m.Rotation.concatenate(
        [m.Rotation.from_quat(QUAT), m.Rotation.from_quat(QUAT[:2])]).quat),
    ("identity", lambda m: m.Rotation.identity().quat),
    ("from_euler_scalar", lambda m: m.Rotation.from_euler("z", 90, degrees=True).as_matrix()),
    ("slerp", lambda m: m.Slerp.init(np.arange(5.0), m.Rotation.from_quat(QUAT))(
        np.array([0, 0.5, 1.2, 3.9, 4.0])).quat),
    ("slerp_scalar_time", lambda m: m.Slerp.init([0, 1, 3, 4, 6], m.Rotation.from_quat(QUAT))(
        2.5).quat),
]


@pytest.mark.parametrize("name,fn", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_conversions_equal_jax(name, fn):
  _close(fn(rt), jax.jit(lambda: fn(jt))(), atol=2e-5 if "degrees" in name else 2e-6)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "XYX", "yzx", "XZ", "y"])
def test_euler_angles_equal_jax(seq):
  """(jax's side jitted: its op-by-op dispatch dominates the run time otherwise)"""
  gimbal = np.array([[0.3, np.pi / 2, 0.2], [0.1, 0.0, 0.4], [0.2, np.pi, 0.1]], np.float32)

  def run(m):
    out = [m.Rotation.from_euler(seq, VEC[:, :len(seq)]).quat]
    if len(seq) == 3:
      out += [m.Rotation.from_quat(QUAT).as_euler(seq),
              m.Rotation.from_quat(QUAT).as_euler(seq, degrees=True),
              # at gimbal lock the angles are not unique (which triple comes back depends on
              # the last bit of the host's arithmetic): compare the rotation they describe
              m.Rotation.from_euler(seq, m.Rotation.from_euler(seq, gimbal).as_euler(seq))
              .as_matrix()]
    return out

  for r, j, atol in zip(run(rt), jax.jit(lambda: run(jt))(), [2e-6, 2e-6, 5e-5, 1e-5],
                        strict=False):
    _close(r, j, atol=atol)


def test_mean_equals_jax_up_to_quaternion_sign():
  r = np.asarray(rt.Rotation.from_quat(QUAT).mean(np.arange(5.0)).quat)
  j = np.asarray(jt.Rotation.from_quat(QUAT).mean(np.arange(5.0)).quat)
  np.testing.assert_allclose(r * np.sign(r[3]), j * np.sign(j[3]), atol=1e-5)


def test_grad_vmap_jit():
  f = lambda m: lambda v: m.Rotation.from_rotvec(v).as_euler("xyz").sum()
  _close(revax.grad(f(rt))(VEC[0]), jax.jit(jax.grad(f(jt)))(VEC[0]), atol=1e-5)
  g = lambda m: lambda q: (m.Rotation.from_quat(q).apply(VEC[:2]) ** 2).sum() + \
      m.Rotation.from_quat(q).as_rotvec().sum()
  _close(revax.grad(g(rt))(QUAT[1]), jax.jit(jax.grad(g(jt)))(QUAT[1]), atol=1e-5)
  h = lambda m: lambda a: m.Rotation.from_euler("zxz", a).as_matrix()
  _close(revax.vmap(h(rt))(VEC), jax.jit(jax.vmap(h(jt)))(VEC))
  slerp = rt.Slerp.init(np.arange(5.0), rt.Rotation.from_quat(QUAT))
  jitted = revax.jit(lambda s, t: s(t).as_rotvec())(slerp, np.array([0.3, 2.2], np.float32))
  _close(jitted, slerp(np.array([0.3, 2.2])).as_rotvec())


def test_errors_match_jax():
  for m in (rt, jt):
    for seq, msg in (("xyzx", "non-empty string"), ("xY", "from \\['x'"),
                     ("xx", "consecutive axes")):
      with pytest.raises(ValueError, match=msg):
        m.Rotation.from_euler(seq, np.zeros(len(seq)))
    with pytest.raises(ValueError, match="Expected 3 axes"):
      m.Rotation.from_quat(QUAT).as_euler("xy")
    with pytest.raises(ValueError):
      m.Rotation.from_euler("z", np.zeros(2))
    with pytest.raises(TypeError, match="not subscriptable"):
      m.Rotation.identity()[0]
    with pytest.raises(TypeError, match="no len"):
      len(m.Rotation.identity())
    with pytest.raises(NotImplementedError):
      m.Rotation.random(None)
    with pytest.raises(ValueError, match="1 dimensional"):
      m.Rotation.from_quat(QUAT).mean(np.ones((5, 1)))
    with pytest.raises(ValueError, match="number of rotations"):
      m.Rotation.from_quat(QUAT).mean(np.ones(3))
    with pytest.raises(TypeError, match="Rotation"):
      m.Slerp.init([0, 1], QUAT[:2])
    with pytest.raises(ValueError, match="at least 2"):
      m.Slerp.init([0], m.Rotation.from_quat(QUAT[:1]))
    with pytest.raises(ValueError, match="timestamps"):
      m.Slerp.init([0, 1, 2], m.Rotation.from_quat(QUAT[:2]))
    with pytest.raises(ValueError, match="at most 1-dimensional"):
      m.Slerp.init([0, 1], m.Rotation.from_quat(QUAT[:2]))(np.zeros((2, 2)))
