"""revax.profiler: traces of annotations written where jax writes its trace, jax's errors for
traces and servers, and the pprof device memory profile of live Arrays."""
import gzip
import json

import pytest

import revax.numpy as rnp
from revax import profiler


def _read_trace(log_dir):
  (run,) = (log_dir / "plugins" / "profile").iterdir()
  (path,) = run.glob("*.trace.json.gz")
  with gzip.open(path, "rt") as f:
    return run, json.load(f)


def test_trace_records_annotations_where_jax_writes_its_trace(tmp_path):
  @profiler.annotate_function
  def step(x):
    return (x * 2).block_until_ready()

  with profiler.TraceAnnotation("before"):  # no trace runs: not recorded
    pass
  with profiler.trace(tmp_path, create_perfetto_trace=True):
    assert profiler.TraceAnnotation.is_enabled()
    with profiler.StepTraceAnnotation("train", step_num=3):
      with profiler.TraceAnnotation("inner", batch=8):
        step(rnp.ones(3))
  assert not profiler.TraceAnnotation.is_enabled()
  run, doc = _read_trace(tmp_path)
  spans = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X"}
  assert set(spans) == {"train 3", "inner", step.__wrapped__.__qualname__}
  assert spans["inner"]["args"] == {"batch": "8"}
  outer, inner = spans["train 3"], spans["inner"]
  assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
  with gzip.open(run / "perfetto_trace.json.gz", "rt") as f:
    assert "metadata" not in json.load(f)


def test_trace_errors_match_jax(tmp_path):
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  profiler.start_trace(tmp_path)
  try:
    with pytest.raises(RuntimeError, match="Only one profile may be run at a time"):
      profiler.start_trace(tmp_path)
  finally:
    profiler.stop_trace()
  with pytest.raises(ValueError, match="No active profiler server"):
    profiler.stop_server()
  with pytest.raises(NotImplementedError, match="no profiler server"):
    profiler.start_server(9999)
  options = profiler.ProfileOptions()
  assert options.host_tracer_level == 2 and options.python_tracer_level == 1


def _fields(buf):
  """(field number, value) pairs of a protobuf message: ints for varints, bytes otherwise."""
  i, out = 0, []

  def varint():
    nonlocal i
    n = shift = 0
    while True:
      b = buf[i]
      i += 1
      n |= (b & 0x7F) << shift
      shift += 7
      if b < 0x80:
        return n

  while i < len(buf):
    key = varint()
    if key & 7 == 0:
      out.append((key >> 3, varint()))
    else:
      n = varint()
      out.append((key >> 3, buf[i:i + n]))
      i += n
  return out


def test_device_memory_profile_is_pprof_of_the_live_arrays(tmp_path):
  keep = rnp.ones((10, 10), rnp.float32) + 1
  profile = _fields(gzip.decompress(profiler.device_memory_profile()))
  strings = [v.decode() for k, v in profile if k == 6]
  assert strings[0] == "" and {"allocations", "space", "bytes", "float32[10,10]"} <= set(strings)
  functions = {dict(_fields(v))[1]: strings[dict(_fields(v))[2]] for k, v in profile if k == 5}
  found = []
  for k, v in profile:
    if k == 2:
      sample = dict(_fields(v))  # 1: packed location ids, 2: packed values
      if functions[sample[1][0]] == "float32[10,10]":
        found.append(sample[2])
  assert bytes([1, 0x90, 0x03]) in found  # values (1 allocation, 400 bytes), packed varints
  profiler.save_device_memory_profile(tmp_path / "mem.prof")
  assert gzip.decompress((tmp_path / "mem.prof").read_bytes())
  with pytest.raises(RuntimeError, match="not in the list of known backends"):
    profiler.device_memory_profile("tpu_nope")
  del keep
