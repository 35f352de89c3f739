"""revax.ffi.include_dir() and the FFI type registry against jax.ffi: one C++ source, written
with XLA's C++ FFI API (`xla/ffi/api/ffi.h`, XLA_FFI_DEFINE_HANDLER_SYMBOL), is compiled by the
system C++ compiler twice, against revax.ffi.include_dir() for revax and jax.ffi.include_dir()
for jax; both libraries are registered and called the same way and must behave the same: a
stateless kernel eagerly and jitted, its error, a stateful handler whose state type must be
registered first (register_ffi_type), and register_ffi_type's / register_ffi_type_id's errors.
A handler compiled against jaxlib's own headers (FFI 0.3) is refused by revax's plugin (FFI 0.2)
with XLA's message, where XLA's PJRT registration would drop it silently."""
import ctypes
import os
import shutil
import subprocess

import jax
import numpy as np
import pytest

import revax
from tests.platform_tolerances import on_the_cpu_device

SOURCE = r"""
#include <cstdint>
#include <memory>
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

// y = scale * x (float32); a negative scale is the kernel's own error
static ffi::Error ScaleImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                            float scale) {
  if (scale < 0) return ffi::Error::InvalidArgument("negative scale");
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = scale * x.typed_data()[i];
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Scale, ScaleImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>()
        .Attr<float>("scale"));

// a counter made once per compiled program (instantiate stage), read and bumped per call
struct Counter {
  static ffi::TypeId id;
  explicit Counter(int64_t start) : value(start) {}
  int64_t value;
};
ffi::TypeId Counter::id = {};
static ffi::ErrorOr<std::unique_ptr<Counter>> CounterMake(int64_t start) {
  return std::make_unique<Counter>(start);
}
static ffi::Error CounterNext(Counter* counter, ffi::ResultBuffer<ffi::S32> out) {
  out->typed_data()[0] = static_cast<int32_t>(counter->value++);
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterInstantiate, CounterMake,
    ffi::Ffi::BindInstantiate().Attr<int64_t>("start"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterExecute, CounterNext,
    ffi::Ffi::Bind().Ctx<ffi::State<Counter>>().Ret<ffi::Buffer<ffi::S32>>());
extern "C" void* CounterTypeId() { return &Counter::id; }
static ffi::TypeInfo counter_info = ffi::MakeTypeInfo<Counter>();
extern "C" void* CounterTypeInfo() { return &counter_info; }
"""


def _compile(folder, name: str, include: str) -> ctypes.CDLL:
  cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which(
      "clang++")
  if cxx is None:
    pytest.skip("no C++ compiler on this machine: the FFI header test needs one")
  source, lib = folder / f"{name}.cc", folder / f"lib{name}.so"
  source.write_text(SOURCE)
  subprocess.run([cxx, "-std=c++17", "-shared", "-fPIC", "-O1", "-w", f"-I{include}", "-o",
                  str(lib), str(source)], check=True)
  library = ctypes.cdll.LoadLibrary(str(lib))
  for symbol in ("CounterTypeId", "CounterTypeInfo"):
    getattr(library, symbol).restype = ctypes.c_void_p
  return library


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
  folder = tmp_path_factory.mktemp("ffi_headers")
  jax.devices()  # jax registers FFI targets and types with its CPU client once it exists
  return {"revax": _compile(folder, "kernels_revax", revax.ffi.include_dir()),
          "jax": _compile(folder, "kernels_jax", jax.ffi.include_dir())}


LIBS = {"revax": revax, "jax": jax}


@pytest.fixture()
def cpu_plugin():
  """The CPU device as revax's default for the test: the handlers registered here are the CPU
  plugin's (on a TPU, platform_tolerances.NO_FFI; the CPU default on the CPU)."""
  with on_the_cpu_device():
    yield


def _outcome(fn):
  try:
    return ("ok", np.asarray(fn()).tolist())
  except Exception as e:  # noqa: BLE001 - the outcome is compared with jax's
    message = str(e).split(": ", 1)[-1] if ":" in str(e) else str(e)
    return (type(e).__name__, message)


def _scale_outcomes(lib, F):
  F.ffi.register_ffi_target("hdr_scale", F.ffi.pycapsule(lib.Scale))
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  call = F.ffi.ffi_call("hdr_scale", F.ShapeDtypeStruct(x.shape, x.dtype))
  return [_outcome(lambda: call(x, scale=np.float32(2.5))),
          _outcome(lambda: F.jit(lambda v: call(v * 2, scale=np.float32(0.5)))(x)),
          _outcome(lambda: F.jit(lambda v: call(v, scale=np.float32(-1)))(x))]


def test_include_dir_headers_build_a_working_handler(libs, cpu_plugin):
  assert os.path.isfile(os.path.join(revax.ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))
  assert isinstance(revax.ffi.include_dir(), str)
  got, want = _scale_outcomes(libs["revax"], revax), _scale_outcomes(libs["jax"], jax)
  assert got[:2] == want[:2]
  assert got[2][1] == want[2][1] == "negative scale"
  assert got[2][0] == "RuntimeBackendError" and want[2][0] == "JaxRuntimeError"
  assert issubclass(revax._src.runtime.pjrt.RuntimeBackendError, revax.errors.JaxRuntimeError)


def _stateful_outcomes(lib, F):
  out = []
  bundle = {"instantiate": F.ffi.pycapsule(lib.CounterInstantiate),
            "execute": F.ffi.pycapsule(lib.CounterExecute)}
  out.append(_outcome(lambda: F.ffi.register_ffi_target("hdr_counter", bundle)))
  tid = F.ffi.pycapsule(lib.CounterTypeId())
  out.append(("id", ctypes.c_int64.from_address(lib.CounterTypeId()).value))
  F.ffi.register_ffi_type("hdr_counter_state",
                          {"type_id": tid, "type_info": F.ffi.pycapsule(lib.CounterTypeInfo())})
  out.append(("id", ctypes.c_int64.from_address(lib.CounterTypeId()).value > 0))
  F.ffi.register_ffi_target("hdr_counter", bundle)
  count = F.ffi.ffi_call("hdr_counter", F.ShapeDtypeStruct((), np.int32), has_side_effect=True)
  f = F.jit(lambda: count(start=10))
  out += [_outcome(f) for _ in range(3)]
  out += [_outcome(lambda: count(start=s)) for s in (5, 5, 7)]
  # the same name with the same id again is accepted; with another id it is not
  out.append(_outcome(lambda: F.ffi.register_ffi_type("hdr_counter_state", {"type_id": tid})))
  other = ctypes.c_int64(0)
  out.append(_outcome(lambda: F.ffi.register_ffi_type(
      "hdr_counter_state", {"type_id": F.ffi.pycapsule(ctypes.addressof(other))})))
  return out


def test_stateful_handler_and_its_registered_type(libs, cpu_plugin):
  got, want = _stateful_outcomes(libs["revax"], revax), _stateful_outcomes(libs["jax"], jax)
  assert [o[1] for o in got] == [o[1] for o in want]
  assert [o[0] for o in got[3:-1]] == [o[0] for o in want[3:-1]]
  assert want[0][0] == want[-1][0] == "JaxRuntimeError"
  assert got[0][0] == got[-1][0] == "RuntimeBackendError"
  assert got[1] == ("id", 0) and got[2] == ("id", True)


@pytest.mark.parametrize("registration", [
    {}, {"type_id": 5}, {"type_info": None}, "not a dict",
])
def test_register_ffi_type_errors(libs, registration):
  def outcome(F):
    try:
      F.ffi.register_ffi_type("hdr_bad_type", registration)
      return "ok"
    except Exception as e:  # noqa: BLE001
      assert isinstance(e, F.errors.JaxRuntimeError)
      return str(e)
  assert outcome(revax) == outcome(jax)


def test_register_ffi_type_id_is_gone_as_in_jax():
  for F in (revax, jax):
    with pytest.raises(ValueError, match="not supported after jaxlib version 381"):
      F.ffi.register_ffi_type_id("x", None)
    with pytest.raises(ValueError, match="not supported after jaxlib version 381"):
      F.ffi.register_ffi_type_id("x", None, platform="cpu")


def test_handler_of_another_ffi_version_is_refused(libs, cpu_plugin, tmp_path):
  """jaxlib's headers (FFI 0.3) make handlers the plugin (FFI 0.2) refuses: revax raises XLA's
  message (PJRT's registration would drop the error and the call fail at compile time)."""
  other = libs["jax"]
  with pytest.raises(revax.errors.JaxRuntimeError, match=r"API version \(0\.3\) is incompatible "
                     r"with the framework's API version \(0\.2\)"):
    revax.ffi.register_ffi_target("hdr_scale_03", revax.ffi.pycapsule(other.Scale))
  f = revax.jit(lambda v: revax.ffi.ffi_call("hdr_scale_03", revax.ShapeDtypeStruct(
      v.shape, v.dtype))(v, scale=np.float32(1)))
  with pytest.raises(revax.errors.JaxRuntimeError, match="No FFI handler registered"):
    f(np.ones(3, np.float32))


def test_bundle_stages_are_checked():
  with pytest.raises(ValueError, match="stages of a handler bundle"):
    revax.ffi.register_ffi_target("hdr_bad", {"prepare": 1})
  with pytest.raises(ValueError, match="stages of a handler bundle"):
    revax.ffi.register_ffi_target("hdr_bad", {"execute": 1, "cleanup": 2})


def test_headers_are_package_data():
  import tomllib
  root = os.path.dirname(revax.__file__)
  meta = tomllib.loads(open(os.path.join(os.path.dirname(root), "pyproject.toml")).read())
  patterns = meta["tool"]["setuptools"]["package-data"]["revax"]
  assert "include/xla/ffi/api/*.h" in patterns
  for name in ("c_api.h", "api.h", "ffi.h"):
    assert os.path.isfile(os.path.join(root, "include", "xla", "ffi", "api", name))
