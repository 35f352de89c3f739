"""revax.scipy: SciPy functions on revax arrays, as in jax.scipy."""
from revax.scipy import special as special
from revax.scipy import fft as fft
from revax.scipy import signal as signal
from revax.scipy import stats as stats
from revax.scipy import integrate as integrate
from revax.scipy import optimize as optimize
from revax.scipy import ndimage as ndimage
from revax.scipy import cluster as cluster
from revax.scipy import linalg as linalg
from revax.scipy import interpolate as interpolate
from revax.scipy import sparse as sparse
