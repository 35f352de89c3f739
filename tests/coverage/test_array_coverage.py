"""Coverage of jax 0.10.2's Array and tracer attributes: every public attribute (dunders too) of
a jax Array, and of a jax tracer inside jit, grad and vmap, must exist on revax's counterpart,
except the ones listed below with the reason (printed with `-s`). The names come from `dir()` of
real jax objects, never from memory.

Then the behaviour of the attributes, compared with jax call by call: one-device checks here,
the ones that need several devices (commitment, shards, sizes of split and replicated arrays) in
tests/sharding/array_surface_child.py, run once from here.
"""
import operator
import pickle
import warnings
import weakref

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import revax
import revax.numpy as rnp
from tests.platform_tolerances import DEVICE_POINTERS, as_the_oracles_output, skip_on_tpu
from tests.sharding.children import run_child


def _names(obj) -> set:
  """The attributes a user reaches on `obj`: public names and dunders."""
  return {n for n in dir(obj) if not n.startswith("_") or n.startswith("__")}


_IMPL = ("an implementation detail of jax's ArrayImpl class (its instance dict, finalizer, "
         "class annotations), not array API")
ARRAY = {
    "__cuda_array_interface__": "CUDA's array interface: GPU arrays only (revax runs on CPU)",
    **{n: _IMPL for n in ("__annotations__", "__del__", "__dict__")},
}

_TYPING = "typing.Generic's machinery (jax's Tracer class is Generic over its trace type)"
_JAX_TRACER = ("an attribute of jax's own tracer classes (the internals of its jaxpr, JVP, "
               "linearize and batching tracers), not of the Array API")
TRACER = {
    **{n: _TYPING for n in ("__annotations__", "__class_getitem__", "__orig_bases__",
                            "__parameters__")},
    **{n: _JAX_TRACER for n in ("aval_mutable_qdd", "batch_dim", "cur_qdd", "dimension_as_value",
                                "full_lower", "get_const", "get_referent", "mutable_qdd",
                                "parent", "primal", "tangent", "val", "source_info")},
    "__getattr__": ("jax forwards unknown attributes to the tracer's aval; revax defines the "
                    "attributes on its Tracer class instead (the names are compared above)"),
    "__jax_array__": ("jax's tracer forwards the __jax_array__ protocol of avals that define it "
                      "(None otherwise); revax's avals define none"),
}


def _jax_tracers():
  """Public names of jax tracers inside jit, grad and vmap (their union)."""
  seen = set()
  grab = lambda v: (seen.update(_names(v)), v.sum())[1]
  jax.jit(grab)(jnp.ones(3))
  jax.grad(grab)(jnp.ones(3))
  jax.vmap(grab)(jnp.ones((2, 3)))
  return seen


def _revax_tracers():
  """Public names present on every revax tracer class met inside jit, grad and vmap."""
  kinds = []
  grab = lambda v: (kinds.append(_names(v)), v.sum())[1]
  revax.jit(grab)(rnp.ones(3))
  revax.grad(grab)(rnp.ones(3))
  revax.vmap(grab)(rnp.ones((2, 3)))
  return set.intersection(*kinds)


def _report(what, exclusions, jax_names, revax_names):
  print(f"\n{what}: excluded attributes of jax's:")
  for name, reason in sorted(exclusions.items()):
    print(f"  {name}: {reason}")
  assert all(isinstance(r, str) and r for r in exclusions.values())
  stale = sorted(n for n in exclusions if n not in jax_names)
  assert not stale, f"exclusions that jax does not have: {stale}"
  present = sorted(n for n in exclusions if n in revax_names)
  assert not present, f"revax has these excluded names now: {present}"
  missing = sorted(jax_names - revax_names - set(exclusions))
  assert not missing, f"revax's {what} lacks these attributes of jax's: {missing}"


def test_array_has_every_attribute_of_a_jax_array():
  _report("Array", ARRAY, _names(jnp.ones(3)), _names(rnp.ones(3)))


def test_tracers_have_every_attribute_of_jax_tracers():
  _report("tracer", TRACER, _jax_tracers(), _revax_tracers())


# --- behaviour, one device ---------------------------------------------------------------------
def _outcome(thunk):
  """A comparable account of `thunk()`: its value (arrays as dtype, weak type, bits), or the
  name of the exception it raised and the warnings it gave."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
      v = thunk()
    except Exception as e:  # noqa: BLE001 (the exception's type is the result)
      return f"raises {type(e).__name__}"
  got = _value(v)
  if caught:
    got += " warns " + ",".join(sorted({w.category.__name__ for w in caught}))
  return got


def _value(v):
  if isinstance(v, (list, tuple)):
    return "(" + ", ".join(map(_value, v)) + ")"
  if hasattr(v, "aval") and hasattr(v, "dtype") and not hasattr(v, "_trace"):
    a = np.asarray(v)
    bits = list(a.tobytes())
    return f"Array {a.dtype} weak={v.weak_type} shape={a.shape} bytes={bits}"
  return repr(v)


_REVAX_ON_CPU = revax.devices()[0].platform == "cpu"


def _array_cases(lib):
  """The same calls for each library: [(name, thunk)]."""
  j, np_ = (jax, jnp) if lib == "jax" else (revax, rnp)
  x = np_.arange(1.0, 4.0)
  i = np_.int32(5)
  cases = []
  for dt in ("int32", "uint16", "int8", "float32", "float16", "bfloat16", "complex64", "bool"):
    cases.append((f"byteswap {dt}",
                  lambda dt=dt: np_.array([1, 2, 0], dtype=getattr(np_, dt)).byteswap()))
  cases += [
      ("byteswap weak scalar", lambda: np_.asarray(1.5).byteswap()),
      ("byteswap twice", lambda: np_.arange(5, dtype=np_.int32).byteswap().byteswap()),
      ("clone", lambda: x.clone()),
      ("clone is new", lambda: x.clone() is x),
      ("clone weak", lambda: np_.asarray(2.0).clone()),
      ("clone of a deleted original", lambda: _delete_original(x + 1)),
      ("committed of creation", lambda: x.committed),
      ("committed of device_put", lambda: j.device_put(x, j.devices()[0]).committed),
      ("committed of eager on committed",
       lambda: (j.device_put(x, j.devices()[0]) * 2).committed),
      ("committed of jit on uncommitted", lambda: j.jit(lambda a: a + 1)(x).committed),
      ("committed of to_device", lambda: x.to_device(j.devices()[0]).committed),
      ("device_buffer", lambda: x.device_buffer),
      ("device_buffers", lambda: x.device_buffers),
      ("hasattr device_buffer", lambda: hasattr(x, "device_buffer")),
      ("platform", lambda: x.platform()),
      ("on_device_size_in_bytes f32[3]", lambda: x.on_device_size_in_bytes()),
      ("on_device_size_in_bytes int8[5]", lambda: np_.ones(5, np_.int8).on_device_size_in_bytes()),
      ("on_device_size_in_bytes bool[]", lambda: np_.ones((), bool).on_device_size_in_bytes()),
      ("on_device_size_in_bytes f32[0]", lambda: np_.ones(0).on_device_size_in_bytes()),
      ("on_device_size_in_bytes c64[2,3]",
       lambda: np_.ones((2, 3), np_.complex64).on_device_size_in_bytes()),
      ("unsafe_buffer_pointer type", lambda: type(x.unsafe_buffer_pointer()).__name__),
      ("unsafe_buffer_pointer stable", lambda: x.unsafe_buffer_pointer()
       == x.unsafe_buffer_pointer()),
      ("unsafe_buffer_pointer of host data", lambda: type(
          np_.asarray(np.ones(3)).unsafe_buffer_pointer()).__name__),
      ("addressable_data(0)", lambda: x.addressable_data(0)),
      ("addressable_data(0) committed", lambda: x.addressable_data(0).committed),
      ("addressable_data(0) is new", lambda: x.addressable_data(0) is x),
      ("to_device", lambda: x.to_device(j.devices()[0])),
      ("to_device stream=1", lambda: x.to_device(j.devices()[0], stream=1)),
      ("to_device stream=None", lambda: x.to_device(j.devices()[0], stream=None)),
      ("hex int32", lambda: hex(i)),
      ("oct int32", lambda: oct(i)),
      ("__hex__ uint8", lambda: np_.uint8(255).__hex__()),
      ("__oct__ int32", lambda: i.__oct__()),
      ("hex bool", lambda: hex(np_.array(True))),
      ("hex float", lambda: hex(np_.float32(5))),
      ("hex vector", lambda: hex(np_.ones(2, np_.int32))),
      ("__hex__ float", lambda: np_.float32(5).__hex__()),
      ("__oct__ vector", lambda: np_.ones(2, np_.int32).__oct__()),
      ("__array_module__ arrays is the numpy module",
       lambda: x.__array_module__((type(x), np.ndarray)) is np_),
      ("__array_module__ other", lambda: x.__array_module__((type(x), int))),
      ("__numpy_dtype__", lambda: x.__numpy_dtype__),
      ("np.dtype(array)", lambda: np.dtype(x)),
      ("pickled committed", lambda: pickle.loads(pickle.dumps(
          j.device_put(x, j.devices()[0]))).committed),
  ]

  def deleted():
    d = np_.arange(3.0) + 1
    d.delete()
    return d
  cases += [(f"deleted {name}", lambda f=f: f(deleted())) for name, f in [
      ("committed", lambda d: d.committed),
      ("on_device_size_in_bytes", lambda d: d.on_device_size_in_bytes()),
      ("unsafe_buffer_pointer", lambda d: d.unsafe_buffer_pointer()),
      ("addressable_data", lambda d: d.addressable_data(0)),
      ("to_device", lambda d: d.to_device(j.devices()[0]))]]
  if _REVAX_ON_CPU:  # (on another backend revax reads no layouts back: NotImplementedError)
    cases += [
        ("format", lambda: x.format),
        ("format 0-d", lambda: np_.float32(2).format),
        ("format int8 3-d", lambda: np_.ones((2, 3, 4), np_.int8).format),
        ("format bool", lambda: np_.ones((2, 2), bool).format),
        ("format of device_put", lambda: j.device_put(x, j.devices()[0]).format),
        ("format of a deleted array", lambda: deleted().format)]
  return cases


def _delete_original(a):
  c = a.clone()
  a.delete()
  return c.is_deleted()


def _compare(jax_cases, revax_cases):
  diffs = []
  for (name, jf), (_, rf) in zip(jax_cases, revax_cases, strict=True):
    # (on a TPU revax's arrays are the chip's, the oracle's the CPU's: x.platform() is 'tpu')
    want, got = _outcome(jf), as_the_oracles_output(_outcome(rf))
    if want != got:
      diffs.append(f"{name}:\n  jax:   {want}\n  revax: {got}")
  assert not diffs, "\n".join(diffs)


def test_array_attributes_behave_as_jax():
  _compare(_array_cases("jax"), _array_cases("revax"))


def test_device_buffer_messages_are_jax_s():
  for attr in ("device_buffer", "device_buffers"):
    with pytest.raises(AttributeError) as want:
      getattr(jnp.ones(2), attr)
    with pytest.raises(AttributeError) as got:
      getattr(rnp.ones(2), attr)
    assert str(got.value) == str(want.value)


@skip_on_tpu(DEVICE_POINTERS)
def test_unsafe_buffer_pointer_reads_the_array_s_memory():
  """The pointer is the device memory XLA:CPU holds the value in: reading it gives the value."""
  import ctypes
  x = rnp.arange(6, dtype=rnp.int32) * 7
  p = x.unsafe_buffer_pointer()
  assert (np.ctypeslib.as_array((ctypes.c_int32 * 6).from_address(p)) == np.asarray(x)).all()


def test_traceback_is_none():
  """jax records the creating call's traceback on each array; revax records none (a cost on
  every operation) and answers None, which jax answers for arrays it made without one."""
  assert rnp.ones(2).traceback is None


def _tracer_cases(lib):
  """Attribute uses on tracers, under jit, grad and vmap: [(name, fn of the traced value)]."""
  j, np_ = (jax, jnp) if lib == "jax" else (revax, rnp)
  dev = j.devices()[0]
  uses = [
      ("committed", lambda t: t.committed),
      ("addressable_shards", lambda t: t.addressable_shards),
      ("global_shards", lambda t: t.global_shards),
      ("is_fully_addressable", lambda t: t.is_fully_addressable),
      ("is_fully_replicated", lambda t: t.is_fully_replicated),
      ("traceback", lambda t: t.traceback),
      ("addressable_data", lambda t: t.addressable_data(0)),
      ("delete", lambda t: t.delete()),
      ("devices", lambda t: t.devices()),
      ("is_deleted", lambda t: t.is_deleted()),
      ("on_device_size_in_bytes", lambda t: t.on_device_size_in_bytes()),
      ("unsafe_buffer_pointer", lambda t: t.unsafe_buffer_pointer()),
      ("__dlpack__", lambda t: t.__dlpack__()),
      ("sharding", lambda t: t.sharding),
      ("device", lambda t: t.device),
      ("hasattr sharding", lambda t: hasattr(t, "sharding")),
      ("itemsize", lambda t: t.itemsize),
      ("nbytes", lambda t: t.nbytes),
      ("byteswap", lambda t: type(t.byteswap()).__name__ == type(t).__name__),
      ("to_device", lambda t: t.to_device(dev) is t or type(t.to_device(dev)) is type(t)),
      ("to_device stream", lambda t: t.to_device(dev, stream=1)),
      ("hex", lambda t: hex(t)),
      ("oct", lambda t: oct(t)),
      ("index", lambda t: operator.index(t)),
      ("__hex__", lambda t: t.__hex__()),
      ("__array_module__ is the numpy module", lambda t: t.__array_module__((type(t),)) is np_),
      ("reversed", lambda t: len(list(reversed(t))) if t.ndim else reversed(t)),
      ("weakref", lambda t: weakref.ref(t)() is t),
      ("clone", lambda t: t.clone()),
      ("platform", lambda t: t.platform()),
      ("block_until_ready", lambda t: t.block_until_ready()),
      ("format", lambda t: t.format),
  ]
  return uses


def _traced_outcomes(lib):
  j, np_ = (jax, jnp) if lib == "jax" else (revax, rnp)
  out = []

  def probe(tag):
    def f(t):
      for name, use in _tracer_cases(lib):
        got = _outcome(lambda: use(t))
        out.append(f"{tag} {name}: {got}")
      return t.sum()
    return f
  j.jit(probe("jit f32[3]"))(np_.ones(3))
  j.jit(probe("jit i32[]"))(np_.int32(5))
  j.grad(probe("grad f32[3]"))(np_.ones(3))
  j.grad(probe("grad f32[]"))(np_.float32(2))
  j.vmap(probe("vmap f32[]"))(np_.ones(3))
  return out


def test_tracer_attributes_behave_as_jax():
  want, got = _traced_outcomes("jax"), _traced_outcomes("revax")
  diffs = [f"jax:   {a}\nrevax: {b}" for a, b in zip(want, got, strict=True) if a != b]
  assert not diffs, "\n".join(diffs)


def test_four_devices_against_jax():
  run_child("array_surface_child.py", "ARRAY_SURFACE_OK")
