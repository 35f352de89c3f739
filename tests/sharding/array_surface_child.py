"""Run in a subprocess with 4 CPU devices for both libraries (see
tests/coverage/test_array_coverage.py): the Array attributes whose answers depend on devices,
written as one transcript per library and compared line by line.

Covered: `committed` (creation, device_put with and without a device or sharding, eager ops and
jit calls on committed and uncommitted inputs, jit with shardings, grad and vmap, clone,
to_device, pickling), `addressable_data` (split and replicated arrays, negative and past-the-end
indices), `on_device_size_in_bytes` (replicated counts every copy), `unsafe_buffer_pointer` (an
error on a sharded array), `clone` and `to_device` of sharded arrays, `platform`.
"""
import pickle
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP
from jax.sharding import SingleDeviceSharding as JSDS

import revax
import revax.numpy as rnp
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP
from revax.sharding import SingleDeviceSharding as RSDS

assert len(jax.devices()) == 4 and revax.local_device_count() == 4


def describe(v):
  """What the transcript records of a result: an array's type of sharding, devices, value and
  commitment; a tuple item by item; anything else as its repr."""
  if isinstance(v, tuple):
    return "(" + "; ".join(map(describe, v)) + ")"
  if hasattr(v, "addressable_shards") and hasattr(v, "dtype"):
    devices = sorted(d.id for d in v.devices())
    return (f"{type(v.sharding).__name__} devices={devices} "
            f"{np.round(np.asarray(v), 5).tolist()} "
            f"{v.dtype} committed={v.committed}")
  return repr(v)


def _clone_then_delete(a):
  c = a.clone()
  a.delete()
  return c.is_deleted()


def transcript(lib):
  """The same calls in each library: [(case, thunk)]."""
  if lib == "jax":
    j, np_, NS, P, SDS = jax, jnp, JNS, JP, JSDS
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    err_name = "JaxRuntimeError"
  else:
    j, np_, NS, P, SDS = revax, rnp, RNS, RP, RSDS
    mesh = revax.make_mesh((4,), ("x",), axis_types=(revax.sharding.AxisType.Explicit,))
    err_name = "JaxRuntimeError"
  d0, d1 = j.devices()[:2]
  x = np_.arange(8.0)  # uncommitted
  y = j.device_put(np_.arange(8.0), d0)  # committed to device 0
  y1 = j.device_put(np_.arange(8.0), d1)  # committed to device 1
  split = j.device_put(x, NS(mesh, P("x")))
  repl = j.device_put(x, NS(mesh, P()))
  double = j.jit(lambda a: a * 2)
  cases = [
      ("creation", lambda: x),
      ("from numpy", lambda: np_.asarray(np.ones(3))),
      ("eager on uncommitted", lambda: x + 1),
      ("jit on uncommitted", lambda: double(x)),
      ("jit on numpy", lambda: double(np.ones(3, np.float32))),
      ("device_put(x, d0)", lambda: y),
      ("device_put(x, d1)", lambda: y1),
      ("device_put(numpy, d0)", lambda: j.device_put(np.ones(3, np.float32), d0)),
      ("device_put(x)", lambda: j.device_put(x)),
      ("device_put(committed)", lambda: j.device_put(y)),
      ("device_put(x, SingleDeviceSharding)", lambda: j.device_put(x, SDS(d0))),
      ("eager on committed", lambda: y + 1),
      ("eager uncommitted + committed", lambda: x + y),
      ("eager unary on committed", lambda: np_.sin(y)),
      ("index of committed", lambda: y[0]),
      ("reshape of committed", lambda: y.reshape(2, 4)),
      ("at-set of committed", lambda: y.at[0].set(3.0)),
      ("astype of committed", lambda: y.astype(np_.int32)),
      ("sum of committed", lambda: y.sum()),
      ("jit on committed", lambda: double(y)),
      ("jit on committed, again (cached call)", lambda: double(y)),
      ("jit mixing committed and not", lambda: j.jit(lambda a, b: a * b)(x, y)),
      ("jit not reading its committed argument", lambda: j.jit(lambda a: np_.zeros(3) + 1)(y)),
      ("jit returning a constant", lambda: j.jit(lambda a: 2.0)(y)),
      ("jit reading it for one result", lambda: j.jit(lambda a: (np_.zeros(3), a))(y)),
      ("jit closing over a committed array", lambda: j.jit(lambda a: a + y)(x)),
      ("jit of a sharded array and an unread committed one",
       lambda: j.jit(lambda a, b: a + 1)(split, y)),
      ("jit out_shardings on uncommitted", lambda: j.jit(lambda a: a * 2,
                                                         out_shardings=SDS(d0))(x)),
      ("jit in_shardings on uncommitted", lambda: j.jit(lambda a: a * 2,
                                                        in_shardings=SDS(d0))(x)),
      ("grad on committed", lambda: j.grad(lambda a: (a * a).sum())(y)),
      ("grad on uncommitted", lambda: j.grad(lambda a: (a * a).sum())(x)),
      ("vmap on committed", lambda: j.vmap(np_.sin)(y)),
      ("clone of uncommitted", lambda: x.clone()),
      ("clone of committed on d1", lambda: y1.clone()),
      ("clone is a new object", lambda: x.clone() is x),
      ("to_device(d1)", lambda: x.to_device(d1)),
      ("to_device(SingleDeviceSharding)", lambda: x.to_device(SDS(d0))),
      ("to_device(NamedSharding)", lambda: x.to_device(NS(mesh, P("x")))),
      ("to_device(d0, stream=0)", lambda: x.to_device(d0, stream=0)),
      ("pickled committed", lambda: pickle.loads(pickle.dumps(y))),
      ("shard data of uncommitted", lambda: x.addressable_shards[0].data),
      ("shard data of committed", lambda: y.addressable_shards[0].data),
      ("addressable_data(0) of uncommitted", lambda: x.addressable_data(0)),
      ("addressable_data(0) of committed on d1", lambda: y1.addressable_data(0)),
      ("addressable_data(5) of a one-device array", lambda: x.addressable_data(5)),
      ("split", lambda: split),
      ("replicated", lambda: repl),
      ("eager on split", lambda: split + 1),
      ("jit on split", lambda: double(split)),
      ("split shard data", lambda: [describe(s.data) for s in split.addressable_shards]),
      ("split addressable_data(0)", lambda: split.addressable_data(0)),
      ("split addressable_data(3)", lambda: split.addressable_data(3)),
      ("split addressable_data(-1)", lambda: split.addressable_data(-1)),
      ("split addressable_data(4)", lambda: split.addressable_data(4)),
      ("replicated addressable_data(2)", lambda: repl.addressable_data(2)),
      ("replicated addressable_data(7)", lambda: repl.addressable_data(7)),
      ("split on_device_size_in_bytes", lambda: split.on_device_size_in_bytes()),
      ("replicated on_device_size_in_bytes", lambda: repl.on_device_size_in_bytes()),
      ("one-device on_device_size_in_bytes", lambda: x.on_device_size_in_bytes()),
      ("split unsafe_buffer_pointer", lambda: split.unsafe_buffer_pointer()),
      ("replicated unsafe_buffer_pointer", lambda: repl.unsafe_buffer_pointer()),
      ("one-device unsafe_buffer_pointer is an int",
       lambda: type(y1.unsafe_buffer_pointer()).__name__),
      ("split clone", lambda: (split.clone() is split, describe(split.clone()),
                               split.clone().sharding == split.sharding)),
      ("split clone of a deleted original", lambda: _clone_then_delete(
          j.device_put(x, NS(mesh, P("x"))))),
      ("split platform", lambda: split.platform()),
      ("split byteswap", lambda: split.byteswap()),
  ]
  lines = []
  for name, thunk in cases:
    try:
      result = describe(thunk())
    except Exception as e:  # noqa: BLE001 (the exception's type and text are the result)
      text = str(e).split("\n")[0] if type(e).__name__ in (err_name, "NotImplementedError") \
          else ""
      result = f"raises {type(e).__name__} {text}".rstrip()
    lines.append(f"{name}: {result}")
  return lines


jax_lines, revax_lines = transcript("jax"), transcript("revax")
diffs = [(a, b) for a, b in zip(jax_lines, revax_lines, strict=True) if a != b]
for line in revax_lines:
  print(line)
for a, b in diffs:
  print(f"DIFF\n  jax:   {a}\n  revax: {b}")
if diffs:
  sys.exit(1)
print("ARRAY_SURFACE_OK")
