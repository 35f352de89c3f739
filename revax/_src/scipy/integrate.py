"""revax.scipy.integrate: numerical integration of sampled data (as jax.scipy.integrate)."""
from __future__ import annotations

from revax._src.numpy import reductions, shape_ops
from revax._src.numpy.util import aval_of, canonicalize_axis, check_arraylike, promote_args_inexact

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """Integrate `y` along `axis` with the composite trapezoidal rule.

  Args:
    y: samples of the integrand.
    x: sample points (1-D of y's length along `axis`, or y's shape); if None, spacing `dx`.
    dx: spacing of the samples when `x` is None.
    axis: the axis to integrate along.

  Returns:
    The integral: y's shape without `axis`.

  Example:
    >>> import revax.scipy.integrate
    >>> revax.scipy.integrate.trapezoid(jnp.array([1.0, 2.0, 3.0]))
    Array(4., dtype=float32)
  """
  if x is None:
    check_arraylike("trapezoid", y)
    (y,) = promote_args_inexact("trapezoid", y)
    axis = canonicalize_axis(axis, aval_of(y).ndim)
    y = shape_ops.moveaxis(y, axis, -1)
    n = aval_of(y).shape[-1]
    total = reductions.sum(y, axis=-1)
    if n:
      total = total - 0.5 * (y[..., 0] + y[..., n - 1])
    return (dx * total).astype(aval_of(total).dtype) if n else total
  check_arraylike("trapezoid", y, x)
  y, x = promote_args_inexact("trapezoid", y, x)
  axis = canonicalize_axis(axis, aval_of(y).ndim)
  y = shape_ops.moveaxis(y, axis, -1)
  if aval_of(x).ndim == 1:
    if aval_of(x).shape[0] != aval_of(y).shape[-1]:
      raise ValueError(f"trapezoid: x of length {aval_of(x).shape[0]} does not match y's "
                       f"length {aval_of(y).shape[-1]} along axis {axis}")
  else:
    x = shape_ops.moveaxis(x, axis, -1)
  widths = x[..., 1:] - x[..., :-1]
  return reductions.sum(widths * (y[..., 1:] + y[..., :-1]) * 0.5, axis=-1)
