"""revax.scipy.signal: convolution, correlation and spectral analysis, as jax.scipy.signal."""
from revax._src.scipy.signal import convolve as convolve
from revax._src.scipy.signal import convolve2d as convolve2d
from revax._src.scipy.signal import correlate as correlate
from revax._src.scipy.signal import correlate2d as correlate2d
from revax._src.scipy.signal import detrend as detrend
from revax._src.scipy.signal import fftconvolve as fftconvolve
