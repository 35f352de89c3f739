"""The optional C extension of revax's call path (the rest of the metadata is in pyproject.toml).

`revax/_src/runtime/_fastpath.c` is built where a C compiler and Python's headers are present;
where the build fails, the install goes on without it and revax calls the plugin through ctypes
(the same steps, slower per call; see revax/_src/runtime/fastpath.py).
`revax/_src/runtime/_lapack.c` (XLA FFI handlers calling LAPACK for jitted eigh, svd and lu on
CPU) is optional the same way: without it those lower to algorithms written in lax
(see revax/_src/runtime/lapack.py). `revax/_src/runtime/_buffer.c` gives Arrays the buffer
protocol (memoryview, read-only); without it memoryview(x) raises TypeError.
"""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("revax._src.runtime._fastpath", ["revax/_src/runtime/_fastpath.c"],
              extra_compile_args=["-O2"], optional=True),
    Extension("revax._src.runtime._lapack", ["revax/_src/runtime/_lapack.c"],
              extra_compile_args=["-O2", "-pthread"], extra_link_args=["-pthread"],
              optional=True),  # (conv_handler's optional second thread)
    Extension("revax._src.runtime._buffer", ["revax/_src/runtime/_buffer.c"],
              extra_compile_args=["-O2"], optional=True),
])
