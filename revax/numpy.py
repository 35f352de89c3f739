"""revax.numpy: NumPy's API on revax arrays, with JAX's semantics."""
from revax._src.numpy.ufuncs import add as add
from revax._src.numpy.ufuncs import exp as exp
from revax._src.numpy.ufuncs import multiply as multiply
from revax._src.numpy.ufuncs import negative as negative

from revax._src.numpy import array_methods as _array_methods
import sys as _sys
_array_methods.install(_sys.modules[__name__])
del _sys
