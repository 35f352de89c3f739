"""NumPy's constants, as plain Python values (as in jax.numpy)."""
from __future__ import annotations

import numpy as np

pi = np.pi
e = np.e
euler_gamma = np.euler_gamma
inf = np.inf
nan = np.nan
newaxis = None
