"""Memory spaces (`revax.memory`, revax/_src/memory.py and core/memory_space.py) against jax 0.10.2
on the CPU, whose devices address three memories (device, pinned_host, unpinned_host).

Each case runs the same program through revax and jax (`_both`) and compares what it reports:
types (`typeof`, printed `float32<host>[4]`), `.sharding` with its memory kind, values, the
device_put equations of jaxprs, the `mhlo.memory_kind` attributes and
`annotate_device_placement` calls of lowered programs, and error types and messages. Where the
value is a revax Array, the memory PJRT says its buffer is in (PJRT_Buffer_Memory) must be the
one its sharding reports: placement is real, not a label."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP
from jax.sharding import SingleDeviceSharding as JSDS

import revax
import revax.numpy as rnp
from revax._src.runtime.array import Array as ConcreteArray
from revax.sharding import NamedSharding as RNS
from revax.sharding import PartitionSpec as RP
from revax.sharding import SingleDeviceSharding as RSDS

from tests.platform_tolerances import ON_TPU

# revax refuses host memories on a TPU (memories.HOST_MEMORIES_ON): the chip's first run of these
# tests found arguments in host memory compiled with device layouts and host-memory results
# refused by XLA:TPU; test_host_memories_are_refused_off_the_cpu checks the refusal
pytestmark = pytest.mark.skipif(ON_TPU, reason=(
    "host memories are refused on a TPU (NotImplementedError, memories.HOST_MEMORIES_ON); "
    "these compare with jax's CPU memories"))

X = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def _lib(name):
  if name == "jax":
    return jax, jnp, JSDS, JNS, JP
  return revax, rnp, RSDS, RNS, RP


def _both(fn):
  """fn(lib, np-module, SingleDeviceSharding, NamedSharding, P) through jax and revax."""
  return fn(*_lib("jax")), fn(*_lib("revax"))


def _where(x):
  """What a value reports about its placement: type, sharding's kind and memory, value; for a
  revax Array also checks that its buffer is where its sharding says."""
  s = x.sharding
  if isinstance(x, ConcreteArray) and x._buf is not None:
    assert x._buf.memory.kind == s.memory_kind, (x._buf.memory, s)
  typ = revax.typeof(x) if isinstance(x, ConcreteArray) else jax.typeof(x)
  return (str(typ), str(typ.memory_space), type(s).__name__, s.memory_kind,
          np.asarray(x).tolist())


def test_namespace_is_jax_s():
  assert sorted(n for n in dir(revax.memory) if not n.startswith("_")) == \
      sorted(n for n in dir(jax.memory) if not n.startswith("_"))
  S, JS = revax.memory.Space, jax.memory.Space
  assert [m.name for m in S] == [m.name for m in JS]
  assert [repr(m) for m in S] == [repr(m) for m in JS]
  assert [str(m) for m in S] == [str(m) for m in JS]
  assert S.__name__ == JS.__name__ == "MemorySpace"


def test_device_memories_are_jax_s():
  rd, jd = revax.devices()[0], jax.devices()[0]
  r = [(repr(m), str(m), m.kind, m.platform) for m in rd.addressable_memories()]
  j = [(repr(m), str(m), m.kind, m.platform) for m in jd.addressable_memories()]
  assert r == j
  assert (repr(rd.default_memory()), rd.default_memory().kind) == (
      repr(jd.default_memory()), jd.default_memory().kind)


_PLACEMENTS = {
    "space Host": lambda L, S, N, P, d: L.memory.Space.Host,
    "space Device": lambda L, S, N, P, d: L.memory.Space.Device,
    "sharding pinned_host": lambda L, S, N, P, d: S(d, memory_kind="pinned_host"),
    "sharding unpinned_host": lambda L, S, N, P, d: S(d, memory_kind="unpinned_host"),
    "with_memory_kind": lambda L, S, N, P, d: S(d).with_memory_kind("pinned_host"),
    "named pinned_host": lambda L, S, N, P, d: N(L.make_mesh((1,), ("a",)), P(),
                                                 memory_kind="pinned_host"),
}


@pytest.mark.parametrize("name", list(_PLACEMENTS))
def test_device_put_places_as_jax_does(name):
  """device_put into a memory and back, and an eager op on the result (which stays there)."""
  def run(L, np_, S, N, P):
    d = L.devices()[0]
    y = L.device_put(np_.asarray(X), _PLACEMENTS[name](L, S, N, P, d))
    back = L.device_put(y, L.memory.Space.Device)
    # (an eager op on an array over a 1-device mesh gives a plain one-device array in revax,
    # on purpose: tests/sharding/test_one_device_mesh.py; its memory is compared)
    op = _where(y * 2)
    return (_where(y), y.committed, str(L.typeof(y).memory_space), _where(back),
            op[:2] + op[3:], str(L.typeof(y.sum())), str(L.typeof(y[1:])))
  j, r = _both(run)
  assert r == j


def test_jit_follows_the_memory_of_its_arguments():
  """A jitted function of a host array computes a host array (jax's propagation), a device_put
  inside moves results between memories; the lowered module marks them as jax's does."""
  def run(L, np_, S, N, P):
    Sp = L.memory.Space
    y = L.device_put(np_.asarray(X), Sp.Host)
    f = L.jit(lambda a: (a * 2, a.sum(), L.device_put(a, Sp.Device) + 1.0))
    g = L.jit(lambda a: L.device_put(a * 2, Sp.Host) * 3)
    return ([_where(o) for o in f(y)], _where(g(np_.asarray(X))),
            _memory_marks(f.lower(y).as_text()), _memory_marks(g.lower(np_.asarray(X)).as_text()),
            _memory_marks(L.jit(lambda a: a * 2).lower(np_.asarray(X)).as_text()))
  j, r = _both(run)
  assert r == j


def _memory_marks(text):
  """The memory kinds of @main's arguments and results and the placements annotated."""
  main = text[text.index("@main("):]
  sig = main[:main.index("{\n")] if "{\n" in main else main
  args, results = sig.split(") -> ", 1)
  return (re.findall(r'mhlo\.memory_kind = "(\w+)"', args),
          re.findall(r'mhlo\.memory_kind = "(\w+)"', results),
          re.findall(r'_xla_buffer_placement = "(\w+)"', text))


@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host"])
def test_out_shardings_with_a_memory_kind(kind):
  def run(L, np_, S, N, P):
    s = S(L.devices()[0], memory_kind=kind)
    f = L.jit(lambda a: a * 2, out_shardings=s)
    x = np_.asarray(X)
    return (_where(f(x)), _where(f.lower(x).compile()(x)), _memory_marks(f.lower(x).as_text()))
  j, r = _both(run)
  assert r == j


def test_jaxprs_type_device_put_results_in_their_memory():
  def run(L, np_, S, N, P):
    Sp = L.memory.Space
    s = S(L.devices()[0], memory_kind="pinned_host")
    out = []
    for f in (lambda a: L.device_put(a, Sp.Host), lambda a: L.device_put(a, s),
              lambda a: L.device_put(L.device_put(a, Sp.Host) * 2, Sp.Device)):
      jaxpr = L.make_jaxpr(f)(np_.asarray(X)).jaxpr
      out.append([(e.primitive.name, [str(v.aval) for v in e.outvars],
                   repr(e.params.get("devices"))) for e in jaxpr.eqns])
    return out
  j, r = _both(run)
  assert r == j


def _errors(*thunks) -> list:
  """(exception type name, message) of each thunk, each of which must raise."""
  out = []
  for f in thunks:
    with pytest.raises(Exception) as e:
      f()
    out.append((type(e.value).__name__, str(e.value)))
  return out


def test_mixed_memories_are_refused_as_jax_refuses_them():
  def run(L, np_, S, N, P):
    y = L.device_put(np_.asarray(X), L.memory.Space.Host)
    return _errors(lambda: y + np_.asarray(X),
                   lambda: L.jit(lambda a, b: a * b)(y, np_.asarray(X)))
  j, r = _both(run)
  assert r == j


def test_unknown_memory_kinds_are_refused_as_jax_refuses_them():
  def run(L, np_, S, N, P):
    d = L.devices()[0]
    return _errors(lambda: S(d, memory_kind="hbm"),
                   lambda: N(L.make_mesh((1,), ("a",)), P(), memory_kind="hbm"),
                   lambda: S(d).with_memory_kind("hbm"))
  j, r = _both(run)
  assert r == j


def test_transformations_of_device_put_to_a_memory():
  """jvp keeps tangents with their primals; grad brings cotangents back to the operand's
  memory (eager grad: what jax computes); vmap keeps the memory."""
  def run(L, np_, S, N, P):
    Sp = L.memory.Space
    x = np_.asarray(X)
    y = L.device_put(x, Sp.Host)
    p, t = L.jvp(lambda a: L.device_put(a, Sp.Host), (x,), (x,))
    g1 = L.grad(lambda a: L.device_put(L.device_put(a, Sp.Host) * 2, Sp.Device).sum())(x)
    g2 = L.grad(lambda a: L.device_put(a * 2, Sp.Device).sum())(y)
    v = L.vmap(lambda a: L.device_put(a, Sp.Host))(x)
    return [_where(o) for o in (p, t, g1, g2, v)]
  j, r = _both(run)
  assert r == j


def test_grad_of_a_host_argument_is_typed_in_host_memory():
  """The traced gradient with respect to a host array (jax's jaxpr: cotangents moved back to
  host memory by the transposed device_put)."""
  def run(L, np_, S, N, P):
    y = L.device_put(np_.asarray(X), L.memory.Space.Host)
    jaxpr = L.make_jaxpr(L.grad(lambda a: L.device_put(a * 2, L.memory.Space.Device).sum()))(y)
    return [str(v.aval) for v in jaxpr.jaxpr.invars + jaxpr.jaxpr.outvars]
  j, r = _both(run)
  assert r == j


_OPS = {
    "cumsum": lambda L, np_, S, y, x: L.lax.cumsum(y, 1),
    "sort": lambda L, np_, S, y, x: np_.sort(y, axis=1),
    "dot": lambda L, np_, S, y, x: np_.dot(y, y.T),
    "jit matmul": lambda L, np_, S, y, x: L.jit(lambda a: a @ a.T)(y),
    "reshape": lambda L, np_, S, y, x: y.reshape(6, 2),
    "astype": lambda L, np_, S, y, x: y.astype(np_.int32),
    "cond": lambda L, np_, S, y, x: L.lax.cond(True, lambda a: a * 2, lambda a: a, y),
    "scan host carry": lambda L, np_, S, y, x: L.lax.scan(
        lambda c, a: (c + a, a * 2), L.device_put(np_.zeros(3), L.memory.Space.Host), y)[0],
    "scan mixed carry": lambda L, np_, S, y, x: L.lax.scan(
        lambda c, a: (c + a, a * 2), np_.zeros(3), y)[0],
    "device_put no device": lambda L, np_, S, y, x: L.device_put(y),
    "jit in_shardings kind mismatch": lambda L, np_, S, y, x: L.jit(
        lambda a: a + 1, in_shardings=S(L.devices()[0], memory_kind="pinned_host"))(x),
    "jit in_shardings pinned_host": lambda L, np_, S, y, x: L.jit(
        lambda a: a + 1, in_shardings=S(L.devices()[0], memory_kind="pinned_host"))(y),
}


@pytest.mark.parametrize("name", list(_OPS))
def test_operations_on_host_arrays(name):
  """Eager ops (NumPy or compiled), control flow and jit on an array in host memory: results
  stay there, typed so (or jax's error)."""
  def run(L, np_, S, N, P):
    x = np_.asarray(X)
    y = L.device_put(x, L.memory.Space.Host)
    try:
      out = _OPS[name](L, np_, S, y, x)
    except ValueError as e:
      return ("ValueError", str(e))
    return _where(out)
  j, r = _both(run)
  assert r == j


def test_shape_dtype_structs_with_a_named_sharding_s_memory():
  """A ShapeDtypeStruct whose NamedSharding names pinned host memory stands for a host array
  (jax types it so from the sharding)."""
  def run(L, np_, S, N, P):
    s = N(L.make_mesh((1,), ("a",)), P(), memory_kind="pinned_host")
    a = L.ShapeDtypeStruct((4,), np_.float32, sharding=s)
    f = L.jit(lambda x: x * 2)
    # (over Explicit mesh axes jax also makes the result's type an out sharding, annotated
    # with annotate_device_placement: revax's one-device mesh programs take no shardings,
    # tests/sharding/test_one_device_mesh.py; the memory marks of @main are compared)
    return [str(v.aval) for v in f.trace(a).jaxpr.jaxpr.outvars], \
        _memory_marks(f.lower(a).as_text())[:2]
  j, r = _both(run)
  assert r == j


@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host"])
def test_copies_of_an_array_stay_in_its_memory(kind):
  def run(L, np_, S, N, P):
    y = L.device_put(np_.asarray(X), S(L.devices()[0], memory_kind=kind))
    # (jax types a shard's data in device memory while its sharding names the array's: the
    # memory and value are compared)
    shards = [_where(o)[3:] for o in (y.addressable_data(0), y.addressable_shards[0].data)]
    return shards, [_where(o) for o in (L.device_put(y), y.copy())]
  j, r = _both(run)
  assert r == j


def test_device_put_to_any_memory_is_refused():
  """`Space.Any` names no memory to put a value in: revax raises ValueError (jax 0.10.2 fails an
  internal `assert False, "unreachable"`, an AssertionError, which is no error to copy)."""
  with pytest.raises(AssertionError):
    jax.device_put(np.asarray(X), jax.memory.Space.Any)
  with pytest.raises(ValueError, match="MemorySpace.Any names no memory"):
    revax.device_put(np.asarray(X), revax.memory.Space.Any)


def test_programs_of_refs_once_a_value_was_typed_in_host_memory():
  """Once any value is typed outside device memory the default rule runs for every primitive:
  a Ref's memory space is its own, not an operand's (every ref write was once refused)."""
  def run(L, np_, S, N, P):
    L.device_put(np_.asarray(X), L.memory.Space.Host)  # (types a value in host memory)

    def f(x):
      r = L.new_ref(x)
      r[...] = r[...] * 2
      r[1:] += 1.0
      return L.freeze(r)
    x = np_.arange(4.0)
    return (np.asarray(L.jit(f)(x)).tolist(),
            np.asarray(L.grad(lambda a: f(a).sum())(x)).tolist())
  j, r = _both(run)
  assert r == j


def test_compiled_shardings_say_the_memories():
  def run(L, np_, S, N, P):
    Sp = L.memory.Space
    y = L.device_put(np_.asarray(X), Sp.Host)
    c = L.jit(lambda a: (a * 2, L.device_put(a, Sp.Device))).lower(y).compile()
    return repr(c.input_shardings), repr(c.output_shardings)
  j, r = _both(run)
  assert r == j


def test_a_serialized_program_keeps_its_memories():
  """A compiled program of a host array, serialized and loaded back, still computes a host
  array (its types and where its result goes travel with the bytes)."""
  from revax.experimental import serialize_executable as rse
  y = revax.device_put(np.asarray(X), revax.memory.Space.Host)
  compiled = revax.jit(lambda a: a * 2).lower(y).compile()
  loaded = rse.deserialize_and_load(*rse.serialize(compiled))
  out = loaded(y)
  assert _where(out) == _where(compiled(y))
  assert out.sharding.memory_kind == "pinned_host"


def test_tpu_lowering_annotates_placements_as_jax_s():
  """For a TPU (lowered here as text; the chip is not used) a device_put to a memory inside a
  program becomes jax's annotate_device_placement, in program order."""
  from revax._src.interpreters import mlir
  S, JS = revax.memory.Space, jax.memory.Space
  x = np.asarray(X)

  def f(L, Sp):
    return lambda a: L.device_put(L.device_put(a * 2, Sp.Host) * 3, Sp.Device)
  j = jax.jit(f(jax, JS)).trace(x).lower(lowering_platforms=("tpu",)).as_text()
  r = mlir.lower_jaxpr_to_module(revax.make_jaxpr(f(revax, S))(x), platform="tpu")
  assert _memory_marks(r) == _memory_marks(j) == ([], ["device"], ["pinned_host", "device"])


_SEVERAL_DEVICES = """
import numpy as np, revax
from revax.sharding import NamedSharding, PartitionSpec as P
mesh = revax.make_mesh((4,), ("x",))
x = np.arange(8.0, dtype=np.float32)
for put in (lambda: revax.device_put(x, NamedSharding(mesh, P("x"), memory_kind="pinned_host")),
            lambda: revax.device_put(revax.device_put(x, NamedSharding(mesh, P("x"))),
                                     revax.memory.Space.Host)):
  try:
    put()
  except NotImplementedError as e:
    print("refused:", "one-device arrays" in str(e))
y = revax.device_put(x, NamedSharding(mesh, P("x"), memory_kind="device"))
print("device kind:", y.sharding.memory_kind, [s.data._buf.memory.kind for s in y.addressable_shards])
"""


def test_arrays_over_several_devices_stay_in_device_memory():
  """Over several devices revax places arrays in device memory only: another kind is a clear
  NotImplementedError (jax places the shards there), device memory works as before."""
  import subprocess
  import sys
  from tests.child_env import child_env
  run = subprocess.run([sys.executable, "-c", _SEVERAL_DEVICES], capture_output=True, text=True,
                       env=child_env(REVAX_CPU_DEVICE_COUNT="4"), timeout=120)
  assert run.returncode == 0, run.stderr[-2000:]
  assert run.stdout.split("\n")[:3] == [
      "refused: True", "refused: True", "device kind: device ['device', 'device', 'device', "
      "'device']"]


def test_compiled_programs_take_arguments_in_their_memories():
  """A program compiled for device memory refuses a host array (jax's ValueError: the message's
  first line and the shardings are compared; jax names the parameter, revax its position); one
  compiled for host memory takes a NumPy value (it goes where the program wants it)."""
  def run(L, np_, S, N, P):
    x = np.asarray(X)
    y = L.device_put(x, L.memory.Space.Host)
    with pytest.raises(ValueError) as e:
      L.jit(lambda v: v * 2).lower(x).compile()(y)
    lines = str(e.value).split("\n")
    return lines[0], lines[2:], _where(L.jit(lambda v: v * 2).lower(y).compile()(x))
  j, r = _both(run)
  assert r == j
