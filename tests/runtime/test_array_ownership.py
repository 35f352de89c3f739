"""Arrays own their memory (issue 14 item 14): values taken from NumPy are copied where their
owner could still write them, and memory handed out by np.asarray cannot be made writeable."""
import numpy as np
import pytest

import revax
import revax.lax as lax
import revax.numpy as rnp


def _readonly_view_of_writeable_base():
  base = np.arange(6, dtype=np.float32)
  view = base[:]
  view.flags.writeable = False
  return base, view


@pytest.mark.parametrize("convert", [rnp.array, rnp.asarray, lambda v: rnp.asarray(v, np.float32),
                                     lambda v: rnp.array(v, copy=False)],
                         ids=["array", "asarray", "asarray_dtype", "array_copy_false"])
def test_array_of_readonly_view_does_not_follow_its_base(convert):
  base, view = _readonly_view_of_writeable_base()
  x = convert(view)
  base[0] = 100.0
  assert float(x[0]) == 0.0
  np.testing.assert_array_equal(np.asarray(x), np.arange(6, dtype=np.float32))


def test_array_of_readonly_owner_is_copied():
  owner = np.arange(3, dtype=np.float32)
  owner.flags.writeable = False
  x = rnp.asarray(owner)
  owner.flags.writeable = True  # an owner may flip its own flag back
  owner[1] = -1.0
  assert float(x[1]) == 1.0


@pytest.mark.parametrize("op", [lambda v: lax.reshape(v, (2, 3)), lambda v: rnp.reshape(v, (3, 2)),
                                lambda v: lax.transpose(v.reshape(2, 3), (1, 0)),
                                lambda v: rnp.broadcast_to(v, (2, 6)), lambda v: v + 0],
                         ids=["lax.reshape", "jnp.reshape", "transpose", "broadcast_to", "add"])
def test_eager_ops_on_numpy_arrays_do_not_alias_them(op):
  a = np.arange(6, dtype=np.float32)
  x = op(a)
  before = np.asarray(x).copy()
  a[:] = -7.0
  np.testing.assert_array_equal(np.asarray(x), before)


@pytest.mark.parametrize("where", ["host", "device"])
def test_np_asarray_memory_cannot_be_made_writeable(where):
  x = rnp.arange(4.0) if where == "host" else revax.jit(lambda v: v * 1)(np.arange(4.0))
  a = np.asarray(x)
  assert not a.flags.writeable
  with pytest.raises(ValueError):
    a.flags.writeable = True
  with pytest.raises(ValueError):
    a[0] = 5.0
  np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])
  # the device program reads the same values the host copy holds
  np.testing.assert_array_equal(revax.jit(lambda v: v + 0)(x), [0, 1, 2, 3])


def test_explicit_copies_are_writeable_and_independent():
  x = rnp.arange(3.0)
  c = np.array(x)
  assert c.flags.writeable
  c[0] = 9.0
  assert float(x[0]) == 0.0
  with pytest.raises(ValueError, match="copy=False"):
    np.asarray(x, dtype=np.float64, copy=False)
  assert np.asarray(x, dtype=np.float64).dtype == np.float64
