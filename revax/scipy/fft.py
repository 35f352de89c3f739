"""revax.scipy.fft: discrete cosine transforms, as jax.scipy.fft."""
from revax._src.scipy.fft import dct as dct
from revax._src.scipy.fft import dctn as dctn
from revax._src.scipy.fft import idct as idct
from revax._src.scipy.fft import idctn as idctn
