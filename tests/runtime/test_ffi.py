"""The PJRT FFI binding and revax.ffi: a tiny C kernel (XLA FFI signature), compiled during the
test by the system C compiler, registered and called eagerly, under jit, vmap and scan, with
attributes; its error return, an unregistered target, and handler registration errors."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import revax
import revax.numpy as rnp
from revax._src.runtime import ffi
from revax._src.runtime.pjrt import CompileError, RuntimeBackendError
from tests.platform_tolerances import on_the_cpu_device

# The XLA FFI structs the kernel needs, written out from xla/ffi/api/c_api.h (so the test needs
# no XLA headers). A handler answers XLA's metadata query (frame->ext set) with the API version
# of the frame's API, and computes only in the execute stage (3).
KERNEL_C = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct Ext { size_t struct_size; int type; struct Ext* next; } Ext;
typedef struct { size_t struct_size; void* ext; int major, minor; } ApiVersion;
typedef struct { size_t struct_size; ApiVersion api_version; uint32_t traits; } Metadata;
typedef struct { Ext base; Metadata* metadata; } MetadataExt;
typedef struct { size_t struct_size; void* ext; ApiVersion api_version; void* internal;
                 void* (*error_create)(void*); } Api;
typedef struct { size_t struct_size; void* ext; int dtype; void* data; int64_t rank;
                 int64_t* dims; } Buffer;
typedef struct { size_t struct_size; void* ext; int64_t size; void* types; void** items; } List;
typedef struct { size_t struct_size; void* ext; int64_t size; int* types; void** names;
                 void** attrs; } Attrs;
typedef struct { int dtype; void* value; } Scalar;
typedef struct { size_t struct_size; void* ext; const Api* api; void* ctx; int stage; List args;
                 List rets; Attrs attrs; void* future; } CallFrame;
typedef struct { size_t struct_size; void* ext; const char* message; int errc; } ErrorArgs;

static void* error(CallFrame* frame, const char* message) {
  ErrorArgs e = {sizeof(ErrorArgs), NULL, message, 3};
  return frame->api->error_create(&e);
}

/* y = scale * x + shift for float32 x; attributes (sorted by name): scale f32, shift f64. */
void* ScaleShift(CallFrame* frame) {
  if (frame->ext) {
    MetadataExt* m = (MetadataExt*)frame->ext;
    m->metadata->api_version.major = frame->api->api_version.major;
    m->metadata->api_version.minor = frame->api->api_version.minor;
    m->metadata->traits = 0;
    return NULL;
  }
  if (frame->stage != 3) return NULL;
  Buffer* x = (Buffer*)frame->args.items[0];
  Buffer* y = (Buffer*)frame->rets.items[0];
  if (x->dtype != 11) return error(frame, "ScaleShift: expected a float32 input");
  if (frame->attrs.size != 2) return error(frame, "ScaleShift: expected 2 attributes");
  float scale = *(float*)((Scalar*)frame->attrs.attrs[0])->value;
  double shift = *(double*)((Scalar*)frame->attrs.attrs[1])->value;
  int64_t n = 1;
  for (int64_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  for (int64_t i = 0; i < n; ++i)
    ((float*)y->data)[i] = scale * ((float*)x->data)[i] + (float)shift;
  return NULL;
}
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
  cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
  if cc is None:
    pytest.skip("no C compiler on this machine: the revax.ffi kernel test needs one")
  folder = tmp_path_factory.mktemp("ffi")
  source, lib = folder / "kernel.c", folder / "libkernel.so"
  source.write_text(KERNEL_C)
  subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(source)], check=True)
  library = ctypes.cdll.LoadLibrary(str(lib))
  revax.ffi.register_ffi_target("revax_test_scale_shift", revax.ffi.pycapsule(library.ScaleShift))
  return library


@pytest.fixture()
def cpu_plugin():
  """The CPU device as the default for the test: the FFI targets registered here are the CPU
  plugin's (on a TPU, platform_tolerances.NO_FFI; the CPU default on the CPU)."""
  with on_the_cpu_device():
    yield


def _call(shape, dtype=np.float32):
  return revax.ffi.ffi_call("revax_test_scale_shift", revax.ShapeDtypeStruct(shape, dtype),
                            vmap_method="sequential")


x = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_ffi_call_eager_and_jit(kernel, cpu_plugin):
  expect = 2.5 * x - 1
  np.testing.assert_allclose(_call(x.shape)(x, scale=np.float32(2.5), shift=-1.0), expect)
  f = revax.jit(lambda v: _call(v.shape)(v * 1, scale=np.float32(2.5), shift=-1.0))
  np.testing.assert_allclose(f(x), expect)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_ffi_call_vmap(kernel, cpu_plugin, method):
  call = lambda v: revax.ffi.ffi_call("revax_test_scale_shift",
                                      revax.ShapeDtypeStruct(v.shape, v.dtype),
                                      vmap_method=method)(v, scale=np.float32(3), shift=0.5)
  np.testing.assert_allclose(revax.jit(revax.vmap(call))(x), 3 * x + 0.5)


def test_ffi_call_in_scan_and_errors(kernel, cpu_plugin):
  def body(c, v):
    return c + _call(v.shape)(v, scale=np.float32(2), shift=0.0), None
  c, _ = revax.jit(lambda xs: revax.lax.scan(body, np.zeros(3, np.float32), xs))(x)
  np.testing.assert_allclose(c, 2 * x.sum(0))
  with pytest.raises(ValueError, match="cannot be differentiated"):
    revax.grad(lambda v: _call(())(v, scale=np.float32(2), shift=0.0))(np.float32(1))
  # the kernel's own error comes back as a Python exception, the runtime still works afterwards
  with pytest.raises(RuntimeBackendError, match="expected a float32 input"):
    revax.jit(lambda v: _call(v.shape, np.int32)(v, scale=np.float32(1), shift=0.0))(
        np.arange(3, dtype=np.int32))
  np.testing.assert_allclose(revax.jit(lambda v: v + 1)(x), x + 1)


def test_unregistered_target_fails_at_compile(cpu_plugin):
  f = revax.jit(lambda v: revax.ffi.ffi_call("revax_no_such_target",
                                             revax.ShapeDtypeStruct(v.shape, v.dtype))(v))
  with pytest.raises(CompileError, match="No FFI handler registered for revax_no_such_target"):
    f.lower(x).compile()
  with pytest.raises(CompileError, match="revax_no_such_target"):
    f(x)


def test_side_effecting_ffi_call_is_kept():
  def f(v, side):
    revax.ffi.ffi_call("revax_kept_target", revax.ShapeDtypeStruct((), np.float32),
                       has_side_effect=side)(v)
    return v + 1
  assert "revax_kept_target" in revax.jit(lambda v: f(v, True)).lower(x).as_text()
  assert "revax_kept_target" not in revax.jit(lambda v: f(v, False)).lower(x).as_text()


def test_registration_errors(kernel):
  address = ffi.capsule_address(revax.ffi.pycapsule(kernel.ScaleShift))
  assert address == ctypes.cast(kernel.ScaleShift, ctypes.c_void_p).value
  revax.ffi.register_ffi_target("revax_test_scale_shift", kernel.ScaleShift)  # same: a no-op
  with pytest.raises(ValueError, match="already registered"):
    revax.ffi.register_ffi_target("revax_test_scale_shift", address + 16)
  with pytest.raises(NotImplementedError, match="api_version=0"):
    revax.ffi.register_ffi_target("revax_legacy", kernel.ScaleShift, api_version=0)
  with pytest.raises(TypeError, match="PyCapsule"):
    revax.ffi.register_ffi_target("revax_bad", "not a function")
  with pytest.raises(ValueError, match="vmap_method"):
    revax.ffi.ffi_call("t", revax.ShapeDtypeStruct((), np.float32), vmap_method="nope")


def test_python_handler_answers_metadata_and_decodes_frames():
  """The Python handler is registered once; its metadata answer let XLA accept it, and a call
  frame with a scalar and a 2-D buffer of several dtypes round-trips through it."""
  for dtype in (np.float32, np.int32, np.bool_, np.complex64, np.uint8):
    v = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    f = revax.jit(lambda a, s: revax.pure_callback(lambda p, q: (p, q), (
        revax.ShapeDtypeStruct(a.shape, a.dtype), revax.ShapeDtypeStruct((), np.float32)), a, s))
    out, s = f(v, np.float32(4))
    np.testing.assert_array_equal(out, v)
    assert out.dtype == v.dtype and float(s) == 4.0
  assert ffi.PYTHON_CALLBACK_TARGET in {name for name, _ in ffi._registered}


def test_input_output_aliases(kernel, cpu_plugin):
  call = revax.ffi.ffi_call("revax_test_scale_shift", revax.ShapeDtypeStruct(x.shape, x.dtype),
                            input_output_aliases={0: 0})
  f = revax.jit(lambda v: call(v * 1, scale=np.float32(2), shift=1.0))
  assert "output_operand_alias" in f.lower(x).as_text()
  np.testing.assert_allclose(f(x), 2 * x + 1)
  np.testing.assert_allclose(call(x, scale=np.float32(2), shift=1.0), 2 * x + 1)
  bad = revax.ffi.ffi_call("revax_test_scale_shift", revax.ShapeDtypeStruct((3,), x.dtype),
                           input_output_aliases={0: 0})
  with pytest.raises(ValueError, match="different abstract value"):
    bad(x, scale=np.float32(2), shift=1.0)
  with pytest.raises(ValueError, match="outside the range"):
    revax.ffi.ffi_call("revax_test_scale_shift", revax.ShapeDtypeStruct(x.shape, x.dtype),
                       input_output_aliases={1: 0})(x, scale=np.float32(2), shift=1.0)


def test_ffi_lowering_for_a_user_primitive(kernel, cpu_plugin):
  """jax.ffi.ffi_lowering: a primitive of the user's own lowered to a call of the FFI target,
  its params the call's attributes (with backend_config's), row-major or given layouts."""
  from revax._src.core.avals import ShapedArray
  from revax._src.core.trace import Primitive
  from revax._src.interpreters import mlir
  scale_shift_p = Primitive("user_scale_shift")
  scale_shift_p.def_abstract_eval(lambda x, **_: ShapedArray(x.shape, x.dtype))
  mlir.register_lowering(scale_shift_p, revax.ffi.ffi_lowering(
      "revax_test_scale_shift", backend_config={"shift": np.float64(0.5)}))
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  f = revax.jit(lambda v: scale_shift_p.bind(v, scale=np.float32(3.0)))
  np.testing.assert_array_equal(f(x), 3 * x + 0.5)
  assert "revax_test_scale_shift" in f.lower(x).as_text()
  np.testing.assert_array_equal(scale_shift_p.bind(x, scale=np.float32(2.0)), 2 * x + 0.5)
  # a column-major operand and result: the kernel sees the same elements in another order,
  # and XLA transposes in and out (elementwise: the same answer)
  cm_p = Primitive("user_scale_shift_cm")
  cm_p.def_abstract_eval(lambda x, **_: ShapedArray(x.shape, x.dtype))
  mlir.register_lowering(cm_p, revax.ffi.build_ffi_lowering_function(
      "revax_test_scale_shift", operand_layouts=[(0, 1)], result_layouts=[(0, 1)],
      backend_config={"shift": np.float64(1.0)}))
  g = revax.jit(lambda v: cm_p.bind(v, scale=np.float32(-1.0)))
  np.testing.assert_array_equal(g(x), 1.0 - x)
  assert "dense<[0, 1]>" in g.lower(x).as_text()
  with pytest.raises(NotImplementedError, match="string backend_config"):
    revax.ffi.ffi_lowering("t", backend_config="legacy")
  with pytest.raises(ValueError, match="api_version"):
    revax.ffi.ffi_lowering("t", api_version=2)
