"""revax.ops (segment reductions) against jax.ops: identities of empty segments, out-of-bound
and negative ids (dropped, or clamped with mode='clip'), trailing dims, integer and bool data,
buckets, jit, vmap and grad."""
import jax
import numpy as np
import pytest

import revax

CASES = [
    (np.arange(6.0), [0, 0, 1, 1, 1, 2], dict(num_segments=3)),
    (np.arange(6.0), [0, -1, 1, 7, 1, 2], dict(num_segments=4)),
    (np.arange(6.0), [0, -1, 1, 7, 1, 2], dict(num_segments=4, mode="clip")),
    (np.arange(12.0).reshape(6, 2), [0, 0, 1, 1, 1, 2], dict()),
    (np.arange(6, dtype=np.int32), [0, 0, 1, 3, 1, 3], dict(num_segments=5)),
    (np.arange(1, 7.0), [0, 0, 1, 1, 1, 2], dict(num_segments=3, bucket_size=2)),
    (np.array([True, False, True]), [0, 0, 2], dict(num_segments=3)),
]


@pytest.mark.parametrize("name", ["segment_sum", "segment_prod", "segment_max", "segment_min"])
def test_segment_reductions_match_jax(name):
  for data, ids, kw in CASES:
    if data.dtype == bool and name in ("segment_sum", "segment_prod"):
      continue
    ids = np.array(ids, np.int32)
    want = getattr(jax.ops, name)(data, ids, **kw)
    got = getattr(revax.ops, name)(data, ids, **kw)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (name, kw)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"{name} {kw}")


def test_segment_sum_under_transformations():
  ids = np.array([0, 0, 1, 2, 2], np.int32)
  data = np.arange(10.0).reshape(2, 5)
  for mod in (revax, jax):
    out = mod.jit(mod.vmap(lambda d: mod.ops.segment_sum(d, ids, 3)))(data)
    np.testing.assert_array_equal(np.asarray(out), [[1, 2, 7], [11, 7, 17]])
    g = mod.grad(lambda d: mod.ops.segment_max(d, ids, 3).sum())(np.array([1., 3., 2., 5., 4.]))
    np.testing.assert_array_equal(np.asarray(g), [0, 1, 1, 1, 0])


def test_segment_sum_needs_num_segments_for_traced_ids():
  with pytest.raises(TypeError, match="num_segments"):
    revax.jit(lambda i: revax.ops.segment_sum(np.ones(3), i))(np.array([0, 1, 1], np.int32))
  with pytest.raises(TypeError, match="segment_ids must be integers"):
    revax.ops.segment_sum(np.ones(3), np.array([0.0, 1.0, 1.0]))
