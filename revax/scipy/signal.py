"""revax.scipy.signal: convolution, correlation and spectral analysis, as jax.scipy.signal."""
from revax._src.scipy.signal import convolve as convolve
from revax._src.scipy.signal import convolve2d as convolve2d
from revax._src.scipy.signal import correlate as correlate
from revax._src.scipy.signal import correlate2d as correlate2d
from revax._src.scipy.signal import detrend as detrend
from revax._src.scipy.signal import fftconvolve as fftconvolve
from revax._src.scipy.spectral import csd as csd
from revax._src.scipy.spectral import istft as istft
from revax._src.scipy.spectral import stft as stft
from revax._src.scipy.spectral import welch as welch
