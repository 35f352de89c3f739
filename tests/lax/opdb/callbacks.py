"""Op records for the host-callback primitives (revax/_src/lax/callbacks.py, ffi_call.py).

The callbacks are NumPy functions, so the reference is the same NumPy function; the generic
suites check eager vs jit (a direct Python call vs XLA calling back through the FFI handler),
the jaxprs, and vmap (sequential, expand_dims and broadcast_all methods). None of them has a
derivative (grad_order=0: their JVP errors are tested in tests/lax/test_callbacks.py).
`ffi_call` is recorded on revax's own Python handler target, which any ffi_call can name with an
`index` attribute; the C-kernel path is tested in tests/runtime/test_ffi.py.
"""
import numpy as np

import revax
from revax._src.runtime import ffi
from revax.experimental import io_callback
from tests.lax.op_db import OpRecord, args_of, rand


def _sds(shape, dtype=np.float32):
  return revax.ShapeDtypeStruct(shape, dtype)


def _pure(method):
  def fun(x, y):
    shape = np.broadcast_shapes(x.shape, y.shape)
    return revax.pure_callback(lambda a, b: np.sin(a) * b, _sds(shape), x, y, vmap_method=method)
  return fun


def _io(x):
  return io_callback(lambda a: (a * 2).astype(np.int32), _sds(x.shape, np.int32), x)


def _debug(x):
  revax.debug.callback(lambda a: None, x)
  return x + 1


def _ffi_python_target(x):
  index = ffi.register_callable(lambda a: [np.cos(a)])
  call = revax.ffi.ffi_call(ffi.PYTHON_CALLBACK_TARGET, _sds(x.shape), vmap_method="sequential")
  return call(x, index=np.int64(index))


_f32 = np.float32
# With expand_dims/broadcast_all the callback sees batched arrays (leading batch axis, of size 1
# for unbatched ones), which NumPy broadcasting handles when x and y have one shape.
RECORDS = [
    OpRecord("pure_callback_sequential", "pure_callback", _pure("sequential"),
             args_of(rand((2, 3)), rand((3,))), lambda x, y: np.sin(x) * y, grad_order=0),
] + [
    OpRecord(f"pure_callback_{m}", "pure_callback", _pure(m),
             args_of(rand((2, 3)), rand((2, 3))), lambda x, y: np.sin(x) * y, grad_order=0)
    for m in ("expand_dims", "broadcast_all")
] + [
    OpRecord("pure_callback_0d", "pure_callback", _pure("sequential"),
             args_of(rand(()), rand(())), lambda x, y: np.sin(x) * y, grad_order=0),
    OpRecord("io_callback_i32_result", "io_callback", _io, args_of(rand((4,), np.int32)),
             lambda x: (x * 2).astype(np.int32), grad_order=0),
    OpRecord("debug_callback_f32", "debug_callback", _debug, args_of(rand((2, 2))),
             lambda x: x + _f32(1), grad_order=0),
    OpRecord("ffi_call_python_target", "ffi_call", _ffi_python_target, args_of(rand((3, 2))),
             np.cos, grad_order=0),
]
