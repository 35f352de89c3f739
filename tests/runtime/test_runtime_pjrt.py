"""The ctypes binding against the C header: struct layouts, the function table, enum values.

The layout test compiles a small C program against the plugin's own `pjrt_c_api.h` (skipped when
no C compiler or header is available) and compares every offset and STRUCT_SIZE with ours.
"""
import ctypes as C
import os
import pathlib
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest

from revax._src.runtime import pjrt


def _header_dir():
  import importlib.util
  spec = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
  if spec is None:
    return None
  include = pathlib.Path(list(spec.submodule_search_locations)[0]) / "include"
  return include if (include / "pjrt_c_api.h").exists() else None


_STANDALONE = {"PJRT_NamedValue": pjrt.NamedValue, "PJRT_Program": pjrt.Program,
               "PJRT_ExecuteOptions": pjrt.ExecuteOptions}


def _all_structs():
  structs = dict(_STANDALONE)
  structs.update({f"PJRT_{name}_Args": cls for name, cls in pjrt.ARGS.items()})
  return structs


def _c_probe_source():
  """C code printing `name offset` lines for everything Python claims about the header."""
  lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "pjrt_c_api.h"',
           "int main(void) {"]
  for c_name, cls in _all_structs().items():
    lines.append(f'printf("{c_name}.SIZE %zu\\n", (size_t){c_name}_STRUCT_SIZE);')
    for field, ftype in cls._fields_:
      member = ftype._fields_[0][0] if issubclass(ftype, C.Union) else field  # anonymous union
      lines.append(f'printf("{c_name}.{field} %zu\\n", offsetof({c_name}, {member}));')
  for name in pjrt._API_FUNCTIONS:
    lines.append(f'printf("PJRT_Api.{name} %zu\\n", offsetof(PJRT_Api, PJRT_{name}));')
  enum_names = {1: "PRED", 2: "S8", 3: "S16", 4: "S32", 5: "S64", 6: "U8", 7: "U16", 8: "U32",
                9: "U64", 10: "F16", 11: "F32", 12: "F64", 13: "BF16", 14: "C64", 15: "C128",
                16: "F8E5M2", 17: "F8E4M3FN", 18: "F8E4M3B11FNUZ", 19: "F8E5M2FNUZ",
                20: "F8E4M3FNUZ", 21: "S4", 22: "U4", 24: "S2", 25: "U2", 26: "F8E4M3",
                27: "F8E3M4", 28: "F8E8M0FNU", 29: "F4E2M1FN"}
  for code in pjrt.PJRT_TO_NUMPY:
    lines.append(f'printf("enum.{code} %d\\n", (int)PJRT_Buffer_Type_{enum_names[code]});')
  for i, code in enumerate(pjrt.ERROR_CODES):
    lines.append(f'printf("error.{i} %d\\n", (int)PJRT_Error_Code_{code});')
  lines.append('printf("semantics.only_during_call %d\\n", '
               '(int)PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);')
  lines.append("return 0; }")
  return "\n".join(lines)


@pytest.fixture(scope="module")
def header_facts(tmp_path_factory):
  include = _header_dir()
  compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
  if include is None or compiler is None:
    pytest.skip("needs a C compiler and the plugin's pjrt_c_api.h")
  work = tmp_path_factory.mktemp("layout")
  (work / "probe.c").write_text(_c_probe_source())
  subprocess.run([compiler, "-I", str(include), "-o", str(work / "probe"), str(work / "probe.c")],
                 check=True, capture_output=True)
  out = subprocess.run([str(work / "probe")], check=True, capture_output=True, text=True).stdout
  return dict((k, int(v)) for k, v in (line.split() for line in out.splitlines()))


def test_struct_offsets_and_sizes_match_header(header_facts):
  mismatches = []
  for c_name, cls in _all_structs().items():
    if header_facts[f"{c_name}.SIZE"] != cls.STRUCT_SIZE:
      mismatches.append((c_name, "STRUCT_SIZE", header_facts[f"{c_name}.SIZE"], cls.STRUCT_SIZE))
    for field, _ in cls._fields_:
      ours = getattr(cls, field).offset
      if header_facts[f"{c_name}.{field}"] != ours:
        mismatches.append((c_name, field, header_facts[f"{c_name}.{field}"], ours))
  assert not mismatches


def test_function_table_order_matches_header(header_facts):
  for i, name in enumerate(pjrt._API_FUNCTIONS):
    assert header_facts[f"PJRT_Api.{name}"] == pjrt._API_TABLE_OFFSET + 8 * i, name


def test_enum_values_match_header(header_facts):
  for code in pjrt.PJRT_TO_NUMPY:
    assert header_facts[f"enum.{code}"] == code
  for i in range(len(pjrt.ERROR_CODES)):
    assert header_facts[f"error.{i}"] == i
  assert (header_facts["semantics.only_during_call"]
          == pjrt.HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL)


def test_dtype_maps():
  assert pjrt.buffer_type(np.float32) == 11
  assert pjrt.buffer_type(ml_dtypes.bfloat16) == 13
  assert pjrt.numpy_dtype(13) == np.dtype(ml_dtypes.bfloat16)
  assert pjrt.numpy_dtype(1) == np.dtype(np.bool_)
  assert all(pjrt.NUMPY_TO_PJRT[d] == c for c, d in pjrt.PJRT_TO_NUMPY.items())
  with pytest.raises(TypeError, match="not supported"):
    pjrt.buffer_type(np.dtype("U3"))
  assert pjrt.numpy_dtype(23) == np.dtype("V0")  # TOKEN: a buffer of no elements
  with pytest.raises(TypeError, match="buffer type 0 has no NumPy dtype"):
    pjrt.numpy_dtype(0)  # INVALID


def test_compile_options_bytes():
  # executable_build_options{num_replicas=1, num_partitions=1}: never empty (that aborts).
  assert pjrt.compile_options() == bytes.fromhex("1a0420012801")
  spmd = pjrt.compile_options(1, 2, use_spmd_partitioning=True, use_shardy_partitioner=True)
  assert spmd == bytes.fromhex("1a09" "2001" "2802" "3001" "980101")
  assert pjrt.compile_options(portable=True) == bytes.fromhex("1a0420012801" "2001")
  assigned = pjrt.compile_options(device_assignment=[[1]])
  # device_assignment(9){replica_count=1, computation_count=1, computation_devices{ids=[1]}}
  assert assigned == bytes.fromhex("1a0f" "2001" "2801" "4a09" "0801" "1001" "1a03" "0a0101")
  assert pjrt.compile_options(300).startswith(bytes.fromhex("1a05" "20ac02"))  # varint


def test_error_classes():
  e = pjrt.RuntimeBackendError("INVALID_ARGUMENT", "bad shape")
  assert isinstance(e, RuntimeError) and e.code == "INVALID_ARGUMENT"
  assert e.message == "bad shape" and str(e) == "INVALID_ARGUMENT: bad shape"
  c = pjrt.CompileError("UNKNOWN", "parse error")
  assert isinstance(c, pjrt.RuntimeBackendError)
  assert str(c) == "XLA compilation failed: parse error" and c.code == "UNKNOWN"
  import pickle
  again = pickle.loads(pickle.dumps(c))
  assert type(again) is pjrt.CompileError and str(again) == str(c)


def test_compile_option_overrides_encode_as_jaxlib_does():
  """env_option_overrides (CompileOptionsProto field 7): the map entries jaxlib's
  CompileOptions serializes for JAX's `compiler_options` (bytes read from jaxlib 0.10.2)."""
  base = pjrt.compile_options()
  expected = {
      ("xla_gpu_autotune_level", "0"): "3a1d0a16786c615f6770755f6175746f74756e655f6c6576656c"
                                       "12030a0130",
      ("xla_b", True): "3a0b0a05786c615f6212021001",
      ("xla_i", 3): "3a0b0a05786c615f6912021803",
      ("xla_f", 1.5): "3a120a05786c615f66120921000000000000f83f",
  }
  for pair, tail in expected.items():
    assert pjrt.compile_options(option_overrides=[pair]) == base + bytes.fromhex(tail)
  with pytest.raises(TypeError, match="compiler option values"):
    pjrt.compile_options(option_overrides=[("xla_x", [1])])
