"""Bad inputs to device_put and to revax.Array: conversions, indexing (getitem and .at[]),
mutation attempts, operators with foreign operands."""
import numpy as np
import pytest

from tests.bad_inputs.cases import case, check

x3 = np.arange(3, dtype=np.float32)
m23 = np.arange(6, dtype=np.float32).reshape(2, 3)
f4 = np.ones(4, np.float32)


def _arr(a, v=x3):
  return a.np.asarray(v)


def _setitem(a):
  x = _arr(a)
  x[0] = 1.0


CASES = [
    # --- device_put --------------------------------------------------------------------------
    case("device_put/string", "non-array", lambda a: a.top.device_put("abc"), TypeError,
         "of type str is not a valid revax type"),
    case("device_put/object", "non-array", lambda a: a.top.device_put(object()), TypeError,
         "of type object is not a valid revax type"),
    case("device_put/object_array", "dtype", lambda a: a.top.device_put(np.array([object()])),
         TypeError, "does not support dtype object"),
    case("device_put/device_as_string", "static", lambda a: a.top.device_put(x3, "cpu"),
         ValueError, "device_put only accepts None or a revax Device"),
    case("device_put/device_as_int", "static", lambda a: a.top.device_put(x3, 3), ValueError,
         "got 3 of type int"),
    case("device_put/python_int_overflow", "size", lambda a: a.top.device_put(2 ** 40),
         OverflowError, "1099511627776 out of bounds for int32"),
    case("device_put/complex256", "dtype", lambda a: a.top.device_put(np.ones(2, np.clongdouble)),
         TypeError, "does not support dtype complex256"),
    case("device_put/datetime64", "dtype",
         lambda a: a.top.device_put(np.array(["2020-01-01"], dtype="datetime64[D]")), TypeError,
         "does not support dtype datetime64[D]"),
    case("device_put/big_endian", "dtype", lambda a: a.top.device_put(np.arange(3, dtype=">f4")),
         TypeError, "does not support dtype >f4"),
    case("device_put/huge_broadcast_view", "size",
         lambda a: a.top.device_put(np.broadcast_to(np.float32(1), (2 ** 20, 2 ** 20))),
         MemoryError, "4.00 TiB", jax="not run through JAX: it would try to allocate 4 TiB"),
    # --- conversions -------------------------------------------------------------------------
    case("array/len_of_0d", "rank", lambda a: len(_arr(a, np.float32(1))), TypeError,
         "len() of unsized object"),
    case("array/iter_of_0d", "rank", lambda a: list(iter(_arr(a, np.float32(1)))), TypeError,
         "iteration over a 0-d array"),
    case("array/bool_of_many", "rank", lambda a: bool(_arr(a)), ValueError,
         "The truth value of an array with more than one element is ambiguous"),
    case("array/int_of_many", "rank", lambda a: int(_arr(a)), TypeError,
         "arrays can be converted to Python scalars"),
    case("array/float_of_many", "rank", lambda a: float(_arr(a)), TypeError,
         "arrays can be converted to Python scalars"),
    case("array/item_of_many", "rank", lambda a: _arr(a).item(), ValueError,
         "can only convert an array of size 1 to a Python scalar"),
    case("array/hash", "static", lambda a: hash(_arr(a)), TypeError, "unhashable type"),
    case("array/astype_unknown_dtype", "dtype", lambda a: _arr(a).astype("foo"), TypeError,
         "data type 'foo' not understood"),
    # --- mutation ----------------------------------------------------------------------------
    case("array/setitem", "static", _setitem, TypeError,
         "arrays are immutable and do not support in-place item assignment"),
    case("array/setitem_traced", "static",
         lambda a: a.top.jit(lambda x: x.__setitem__(0, 1.0))(x3), TypeError,
         "do not support in-place item assignment"),
    case("array/set_shape", "static", lambda a: setattr(_arr(a), "shape", (3,)), AttributeError,
         "has no setter"),
    # --- indexing ----------------------------------------------------------------------------
    case("getitem/float", "dtype", lambda a: _arr(a)[1.5], TypeError,
         "Indexer must have integer or boolean type, got indexer with type float64"),
    case("getitem/float_array", "dtype", lambda a: _arr(a)[x3], TypeError,
         "Indexer must have integer or boolean type, got indexer with type float32"),
    case("getitem/float_0d_array", "dtype", lambda a: _arr(a)[_arr(a, np.float32(1))], TypeError,
         "got indexer with type float32"),
    case("getitem/string", "non-array", lambda a: _arr(a)["a"], TypeError,
         "does not support string indexing; got idx='a'"),
    case("getitem/object", "non-array", lambda a: _arr(a)[object()], IndexError,
         "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer or "
         "boolean arrays are valid indices"),
    case("getitem/top_level_list", "list-for-array", lambda a: _arr(a)[[0, 2]], TypeError,
         "Using a non-tuple sequence for multidimensional indexing is not allowed"),
    case("getitem/too_many_indices", "rank", lambda a: _arr(a)[0, 0], IndexError,
         "Too many indices: array is 1-dimensional, but 2 were indexed"),
    case("getitem/two_ellipses", "static", lambda a: _arr(a)[..., ...], IndexError,
         "an index can only have a single ellipsis ('...')"),
    case("getitem/zero_step", "size", lambda a: _arr(a)[::0], ValueError,
         "slice step cannot be zero"),
    case("getitem/bool_mask_shape", "rank", lambda a: _arr(a)[np.array([True, False])],
         IndexError, "boolean index did not match"),
    case("getitem/traced_bool_mask", "traced", lambda a: a.top.jit(lambda x: x[x > 0])(x3),
         IndexError, "Array boolean indices must be concrete; got bool[3]"),
    case("getitem/index_arrays_not_broadcastable", "rank",
         lambda a: _arr(a, m23)[np.array([0, 1]), np.array([0, 1, 2])], IndexError,
         "indexing arrays could not be broadcast together with shapes (2,) (3,)",
         jax="revax keeps NumPy's IndexError (asserted in tests/numpy/test_indexing.py); JAX "
         "raises ValueError"),
    case("getitem/float_list_in_tuple", "dtype", lambda a: _arr(a, m23)[[0.5], 0], TypeError,
         "Indexer must have integer or boolean type"),
    case("getitem/zero_size_axis", "empty",
         lambda a: _arr(a, np.zeros((0,), np.float32))[np.zeros((2,), np.int32)], IndexError,
         "index is out of bounds for axis 0 with size 0",
         jax="JAX raises TypeError from its gather shape rule (slice size out of range)"),
    case("at/set_values_shape", "rank", lambda a: _arr(a).at[0:2].set(np.ones(3, np.float32)),
         ValueError, "cannot be broadcast to the indexed shape (2,)"),
    case("at/set_string", "non-array", lambda a: _arr(a).at[0].set("a"), TypeError, "got str"),
    case("at/float_index", "dtype", lambda a: _arr(a).at[1.5].set(0.0), TypeError,
         "Indexer must have integer or boolean type"),
    case("at/unknown_method", "static", lambda a: _arr(a).at[0].frobnicate(0.0), AttributeError,
         "frobnicate"),
    # --- operators ---------------------------------------------------------------------------
    case("operator/pow_string", "non-array", lambda a: _arr(a) ** "a", TypeError,
         "unsupported operand type(s) for ** or pow()"),
    case("operator/add_object", "non-array", lambda a: _arr(a) + object(), TypeError,
         "unsupported operand type(s) for +"),
    case("operator/matmul_scalar", "rank", lambda a: _arr(a) @ 2.0, ValueError,
         "must be at least 1-dimensional"),
    case("operator/compare_shapes", "rank", lambda a: _arr(a) < _arr(a, f4), TypeError,
         "lt got incompatible shapes for broadcasting: (3,), (4,)"),
    case("method/transpose_repeated_axis", "axis", lambda a: _arr(a, m23).transpose(0, 0),
         TypeError, "transpose permutation isn't a permutation of operand dimensions"),
    case("method/sum_axis_out_of_range", "axis", lambda a: _arr(a).sum(axis=1), ValueError,
         "axis 1 is out of bounds for array of dimension 1"),
]


@pytest.mark.parametrize("c", CASES, ids=str)
def test_bad_input(c):
  check(c)


@pytest.mark.parametrize("shape,dtype", [((1024, 1024), np.float32), ((3, 1000), np.int8),
                                         ((2 ** 20, 2 ** 20), np.float32), ((7, 3), np.uint16)])
def test_a_copy_beyond_the_host_s_memory_raises_before_allocating(monkeypatch, shape, dtype):
  """A device_put of a broadcast view larger than the host's physical memory raises NumPy's
  MemoryError before allocating: where the kernel overcommits memory (the TPU machine of
  2026-12-06), NumPy's own 4 TiB allocation succeeded and filling it grew the process past
  30 GiB (device_put/huge_broadcast_view above). The host's memory is made smaller here."""
  import revax
  from revax._src.interpreters import dispatch
  view = np.broadcast_to(np.ones((), dtype), shape)
  nbytes = view.size * view.itemsize
  monkeypatch.setattr(dispatch, "_HOST_MEMORY", nbytes - 1)
  with pytest.raises(MemoryError) as e:
    revax.device_put(view)
  try:
    np.empty(shape, dtype)
  except MemoryError as want:  # NumPy's own message, where NumPy itself refuses
    assert str(e.value) == str(want)
  size = np._core._exceptions._ArrayMemoryError._size_to_string(nbytes)
  assert str(e.value) == (f"Unable to allocate {size} for an array with shape {shape} and data "
                          f"type {np.dtype(dtype)}")
  monkeypatch.setattr(dispatch, "_HOST_MEMORY", nbytes)
  if nbytes < 2 ** 30:  # (at the host's size the copy is made)
    np.testing.assert_array_equal(np.asarray(revax.device_put(view)), view)
