"""3-D rotations as unit quaternions (x, y, z, w), as jax.scipy.spatial.transform: `Rotation`
(conversions to and from matrices, rotation vectors, Euler angles and modified Rodrigues
parameters, composition, inversion, application to vectors, the mean) and `Slerp` (spherical
linear interpolation between key rotations).

Every conversion works on the last axis and broadcasts over the leading ones, so one Rotation
holds one quaternion (shape (4,), `single`) or a batch (shape (n, 4)). The formulas are SciPy's
(and JAX's): Shepperd's method from matrices, series near zero angle for rotation vectors, and
the Bernardes-Viollet quaternion-to-Euler algorithm.
"""
from __future__ import annotations

import re
import typing

import numpy as np

from revax._src.numpy import (contractions, creation, indexing, reductions, searching,
                              shape_ops, ufuncs)
from revax._src.numpy import linalg as jnp_linalg
from revax._src.numpy import numeric as jnp_numeric
from revax._src.numpy.util import promote_args_inexact


# --- quaternion helpers (last axis (x, y, z, w)) --------------------------------------------------
def _part(quat, i):
  return quat[..., i]


def _norm(v):
  return ufuncs.sqrt(reductions.sum(v * v, axis=-1))


def _normalize(quat):
  return quat / _norm(quat)[..., None]


def _compose(p, q):
  """The quaternion product p q (the rotation q, then p)."""
  cross = jnp_linalg.cross(p[..., :3], q[..., :3])
  pw, qw = _part(p, 3), _part(q, 3)
  vec = [pw * _part(q, i) + qw * _part(p, i) + _part(cross, i) for i in range(3)]
  w = pw * qw - _part(p, 0) * _part(q, 0) - _part(p, 1) * _part(q, 1) - _part(p, 2) * _part(q, 2)
  return shape_ops.stack([*vec, w], axis=-1)


def _as_matrix(quat):
  x, y, z, w = (_part(quat, i) for i in range(4))
  x2, y2, z2, w2 = x * x, y * y, z * z, w * w
  xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
  rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
          [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
          [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
  return shape_ops.stack([shape_ops.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(matrix):
  """Shepperd's method: build the quaternion from the largest of the diagonal and the trace."""
  m = lambda r, c: matrix[..., r, c]
  trace = m(0, 0) + m(1, 1) + m(2, 2)
  decision = shape_ops.stack([m(0, 0), m(1, 1), m(2, 2), trace], axis=-1)
  candidates = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    q = [None] * 4
    q[i] = 1 - trace + 2 * m(i, i)
    q[j] = m(j, i) + m(i, j)
    q[k] = m(k, i) + m(i, k)
    q[3] = m(k, j) - m(j, k)
    candidates.append(shape_ops.stack(q, axis=-1))
  candidates.append(shape_ops.stack([m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1),
                                     1 + trace], axis=-1))
  choice = reductions.argmax(decision, axis=-1)
  stacked = shape_ops.stack(candidates, axis=-2)  # (..., 4 candidates, 4)
  quat = indexing.take_along_axis(stacked, choice[..., None, None], axis=-2)[..., 0, :]
  return _normalize(quat)


def _as_rotvec(quat, degrees):
  quat = ufuncs.where(_part(quat, 3)[..., None] < 0, -quat, quat)  # w >= 0: angle in [0, pi]
  angle = 2.0 * ufuncs.arctan2(_norm(quat[..., :3]), _part(quat, 3))
  angle2 = angle * angle
  small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
  large_scale = angle / ufuncs.sin(angle / 2)
  scale = ufuncs.where(angle <= 1e-3, small_scale, large_scale)
  if degrees:
    scale = ufuncs.rad2deg(scale)
  return scale[..., None] * quat[..., :3]


def _from_rotvec(rotvec, degrees):
  (rotvec,) = promote_args_inexact("from_rotvec", rotvec)
  if degrees:
    rotvec = ufuncs.deg2rad(rotvec)
  angle = _norm(rotvec)
  angle2 = angle * angle
  small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
  large_scale = ufuncs.sin(angle / 2) / angle
  scale = ufuncs.where(angle <= 1e-3, small_scale, large_scale)
  return shape_ops.concatenate([scale[..., None] * rotvec, ufuncs.cos(angle / 2)[..., None]],
                               axis=-1)


def _as_mrp(quat):
  w = _part(quat, 3)
  sign = ufuncs.where(w < 0, -1.0, 1.0)
  return (sign / (1.0 + sign * w))[..., None] * quat[..., :3]


def _from_mrp(mrp):
  (mrp,) = promote_args_inexact("from_mrp", mrp)
  squared_plus_1 = reductions.sum(mrp * mrp, axis=-1) + 1
  quat = shape_ops.concatenate([2 * mrp[..., :3], (2 - squared_plus_1)[..., None]], axis=-1)
  return quat / squared_plus_1[..., None]


def _make_canonical(quat):
  """q or -q, whichever has w > 0 (ties broken by x, then y, then z)."""
  neg, zero = quat < 0, quat == 0
  flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0]) | (zero[..., 3] & zero[..., 0] & neg[..., 1])
          | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
  return ufuncs.where(flip[..., None], -quat, quat)


def _check_seq(seq, lengths):
  if len(seq) not in lengths:
    if lengths == (3,):
      raise ValueError(f"Expected 3 axes, got {seq}.")
    raise ValueError(f"Expected axis specification to be a non-empty string of upto 3 "
                     f"characters, got {seq}")
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], "
                     f"got {seq}")
  if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return ["xyz".index(a) for a in seq.lower()], intrinsic


def _elementary_quat(axis, angle):
  zero = creation.zeros_like(angle)
  parts = [zero, zero, zero, ufuncs.cos(angle / 2.0)]
  parts[axis] = ufuncs.sin(angle / 2.0)
  return shape_ops.stack(parts, axis=-1)


def _from_euler(seq, angles, degrees):
  axes, intrinsic = _check_seq(seq, (1, 2, 3))
  (angles,) = promote_args_inexact("from_euler", shape_ops.atleast_1d(angles))
  angles = creation.asarray(angles, dtype=angles.dtype)  # strong, as JAX's quaternions are
  if angles.shape[-1] != len(axes):
    raise ValueError(f"Expected angles of shape (..., {len(axes)}) for seq {seq!r}, got "
                     f"shape {angles.shape}")
  if degrees:
    angles = ufuncs.deg2rad(angles)
  result = _elementary_quat(axes[0], angles[..., 0])
  for idx in range(1, len(axes)):
    quat = _elementary_quat(axes[idx], angles[..., idx])
    result = _compose(result, quat) if intrinsic else _compose(quat, result)
  return result


def _as_euler(quat, seq, degrees):
  """Bernardes and Viollet (2022): Euler angles of any sequence directly from the quaternion."""
  axes, intrinsic = _check_seq(seq, (3,))
  extrinsic = not intrinsic
  first, third = (0, 2) if extrinsic else (2, 0)
  i, j, k = axes if extrinsic else axes[::-1]
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  q = lambda n: _part(quat, n)
  if symmetric:
    a, b, c, d = q(3), q(i), q(j), q(k) * sign
  else:
    a, b, c, d = q(3) - q(j), q(i) + q(k) * sign, q(j) + q(3), q(k) * sign - q(i)
  eps = 1e-7
  middle = 2 * ufuncs.arctan2(ufuncs.hypot(c, d), ufuncs.hypot(a, b))
  case = ufuncs.where(ufuncs.abs(middle) <= eps, 1,
                      ufuncs.where(ufuncs.abs(middle - np.pi) <= eps, 2, 0))
  half_sum, half_diff = ufuncs.arctan2(b, a), ufuncs.arctan2(d, c)
  angles = [creation.zeros_like(middle), middle, creation.zeros_like(middle)]
  angles[0] = ufuncs.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  angles[first] = ufuncs.where(case == 0, half_sum - half_diff, angles[first])
  angles[third] = ufuncs.where(case == 0, half_sum + half_diff, angles[third])
  if not symmetric:
    angles[third] = angles[third] * sign
    angles[1] = angles[1] - np.pi / 2
  out = (shape_ops.stack(angles, axis=-1) + np.pi) % (2 * np.pi) - np.pi
  return ufuncs.rad2deg(out) if degrees else out


# --- Rotation --------------------------------------------------------------------------------------
class Rotation(typing.NamedTuple):
  """Rotation(s) in 3 dimensions, held as unit quaternions `quat` (x, y, z, w): shape (4,) for
  one rotation, (n, 4) for n (as jax.scipy.spatial.transform.Rotation; a pytree).

  Example:
    >>> from revax.scipy.spatial.transform import Rotation
    >>> r = Rotation.from_euler("z", 90, degrees=True)
    >>> r.as_quat()  # (x, y, z, w)
    Array([0.        , 0.        , 0.70710677, 0.70710677], dtype=float32)
    >>> r.apply(jnp.array([1., 0., 0.]))
    Array([0., 1., 0.], dtype=float32)
  """
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations: typing.Sequence):
    """The rotations of a sequence of Rotation objects, joined along the first axis."""
    return cls(shape_ops.concatenate([rotation.quat for rotation in rotations]))

  @classmethod
  def from_euler(cls, seq: str, angles, degrees: bool = False):
    """From Euler angles (..., len(seq)) about the axes of `seq`: "xyz"-style (extrinsic,
    fixed axes) or "XYZ"-style (intrinsic, rotating axes), 1 to 3 axes."""
    return cls(_from_euler(seq, angles, degrees))

  @classmethod
  def from_matrix(cls, matrix):
    """From rotation matrices (..., 3, 3)."""
    (matrix,) = promote_args_inexact("from_matrix", matrix)
    return cls(_from_matrix(matrix))

  @classmethod
  def from_mrp(cls, mrp):
    """From modified Rodrigues parameters (..., 3)."""
    return cls(_from_mrp(mrp))

  @classmethod
  def from_quat(cls, quat):
    """From quaternions (..., 4) in (x, y, z, w) order, normalized."""
    (quat,) = promote_args_inexact("from_quat", quat)
    return cls(_normalize(quat))

  @classmethod
  def from_rotvec(cls, rotvec, degrees: bool = False):
    """From rotation vectors (..., 3): axis times angle."""
    return cls(_from_rotvec(rotvec, degrees))

  @classmethod
  def identity(cls, num: int | None = None, dtype=float):
    """The identity rotation (JAX supports only num=None)."""
    assert num is None
    return cls(creation.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

  @classmethod
  def random(cls, random_key, num: int | None = None):
    """Not implemented (as in JAX)."""
    raise NotImplementedError("Rotation.random is not implemented (as in JAX)")

  def __getitem__(self, indexer):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other) -> Rotation:
    """The composition: `other` first, then `self`."""
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors, inverse: bool = False):
    """Rotate vectors (..., 3) (by the inverse rotation when `inverse`)."""
    matrix = self.as_matrix()
    if inverse:
      matrix = shape_ops.swapaxes(matrix, -1, -2)
    (vectors,) = promote_args_inexact("apply", vectors)
    return contractions.matmul(matrix, vectors[..., None])[..., 0]

  def as_euler(self, seq: str, degrees: bool = False):
    """Euler angles (..., 3) about the 3 axes of `seq` (see from_euler)."""
    return _as_euler(self.quat, seq, degrees)

  def as_matrix(self):
    """Rotation matrices (..., 3, 3)."""
    return _as_matrix(self.quat)

  def as_mrp(self):
    """Modified Rodrigues parameters (..., 3)."""
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees: bool = False):
    """Rotation vectors (..., 3), angles in [0, pi]."""
    return _as_rotvec(self.quat, degrees)

  def as_quat(self, canonical: bool = False, scalar_first: bool = False):
    """Quaternions (..., 4): (x, y, z, w), or (w, x, y, z) with `scalar_first`; `canonical`
    picks the sign with w >= 0."""
    quat = _make_canonical(self.quat) if canonical else self.quat
    return _scalar_first(quat) if scalar_first else quat

  def inv(self):
    """The inverse rotation(s)."""
    return Rotation(self.quat * creation.array([-1, -1, -1, 1], dtype=self.quat.dtype))

  def magnitude(self):
    """The rotation angle(s) in radians, in [0, pi]."""
    return 2.0 * ufuncs.arctan2(_norm(self.quat[..., :3]), ufuncs.abs(_part(self.quat, 3)))

  def mean(self, weights=None):
    """The (weighted) mean rotation: the top eigenvector of sum_i w_i q_i q_i^T."""
    w = (creation.ones(self.quat.shape[0], dtype=self.quat.dtype) if weights is None
         else creation.asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != len(self):
      raise ValueError(f"Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
    k = contractions.dot(w[None, :] * self.quat.T, self.quat)
    _, v = jnp_linalg.eigh(k)
    return Rotation(v[:, -1])

  @property
  def single(self) -> bool:
    """Whether this holds a single rotation (quat of shape (4,))."""
    return self.quat.ndim == 1


def _scalar_first(quat):
  """(x, y, z, w) -> (w, x, y, z)."""
  return shape_ops.concatenate([quat[..., 3:], quat[..., :3]], axis=-1)


# --- Slerp ----------------------------------------------------------------------------------------
class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between key rotations at increasing key times (as
  jax.scipy.spatial.transform.Slerp; build it with `Slerp.init(times, rotations)`).

  Example:
    >>> from revax.scipy.spatial.transform import Rotation, Slerp
    >>> ends = Rotation.from_euler("z", jnp.array([[0.], [90.]]), degrees=True)
    >>> slerp = Slerp.init(jnp.array([0., 1.]), ends)
    >>> jnp.round(slerp(jnp.array(0.5)).as_euler("zyx", degrees=True), 3) + 0.0
    Array([45.,  0.,  0.], dtype=float32)
  """
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations: Rotation):
    """The interpolator of `rotations` (at least 2) at `times` (1-D, increasing)."""
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = creation.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError(f"Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       f"timestamps.")
    starts = Rotation(rotations.as_quat()[:-1])
    ends = Rotation(rotations.as_quat()[1:])
    return cls(times=times, timedelta=jnp_numeric.diff(times), rotations=starts,
               rotvecs=(starts.inv() * ends).as_rotvec())

  def __call__(self, times):
    """The interpolated rotation(s) at `times` (a scalar or 1-D)."""
    t = creation.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single_time = t.ndim == 0
    t = shape_ops.atleast_1d(t)
    ind = ufuncs.maximum(searching.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return result[0] if single_time else result
