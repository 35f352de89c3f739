"""revax.scipy: SciPy functions on revax arrays, as in jax.scipy (so far: special.logsumexp)."""
from revax.scipy import special as special
from revax.scipy import fft as fft
from revax.scipy import signal as signal
