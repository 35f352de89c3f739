"""Op records for dot_general: batch and contracting dimensions in any positions.

The ACCEPTANCE cases (issue 5) run for float32, int32 and bool against an einsum reference; the
generic suites give them jit-vs-eager, check_grads order 2 fwd+rev and the transposition test
(float32), and check_vmap over every pair of batch positions (None or 0..ndim per operand).
"""
import ml_dtypes
import numpy as np

import revax.lax as lax
from tests.lax.op_db import OpRecord, args_of, rand


def _dg(dims, **kw):
  return lambda x, y: lax.dot_general(x, y, dims, **kw)


# (name, lhs shape, rhs shape, dimension_numbers, the same contraction as einsum subscripts)
ACCEPTANCE = [
    ("vec_vec", (5,), (5,), (((0,), (0,)), ((), ())), "i,i->"),
    ("mat_vec_dim0", (5, 7), (5,), (((0,), (0,)), ((), ())), "ij,i->j"),
    ("mat_vec_dim1", (7, 5), (5,), (((1,), (0,)), ((), ())), "ij,j->i"),
    ("two_contracting", (5, 3, 2), (3, 5, 2, 4), (((0, 2), (1, 2)), ((), ())), "abc,xacy->bxy"),
    ("batch_leading", (3, 3, 2), (3, 2, 4), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ("batch_rhs_middle", (3, 3, 2), (2, 3, 4), (((2,), (0,)), ((0,), (1,))), "bij,jbk->bik"),
    ("two_batch", (3, 4, 2, 4), (3, 4, 3, 2), (((2,), (3,)), ((0, 1), (0, 1))),
     "abjc,abdj->abcd"),
    ("batch_middle_last", (3, 5, 2), (2, 4, 5), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik"),
    ("batch_odd_rank4", (7, 3, 5, 2), (2, 2, 4, 5), (((3,), (0,)), ((2,), (3,))),
     "acbj,jekb->bacek"),
]


def einsum_reference(spec, dtype):
  """NumPy's einsum as the reference; bool dots are ORs of ANDs (a count > 0)."""
  if np.dtype(dtype) == np.bool_:
    return lambda x, y: np.einsum(spec, x.astype(np.int64), y.astype(np.int64)) > 0
  return lambda x, y: np.asarray(np.einsum(spec, x, y)).astype(dtype)


_DTYPES = {"f32": np.float32, "i32": np.int32, "bool": np.bool_}

RECORDS = [
    OpRecord(f"dot_general_{name}_{short}", "dot_general", _dg(dims),
             args_of(rand(ls, dtype), rand(rs, dtype)), einsum_reference(spec, dtype),
             linear=short == "f32")
    for name, ls, rs, dims, spec in ACCEPTANCE for short, dtype in _DTYPES.items()
] + [
    OpRecord("dot_general_matmul_f32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 4)), rand((4, 5))), lambda x, y: x @ y, linear=True),
    OpRecord("dot_general_nonleading_batch_f32", "dot_general", _dg((((2,), (0,)), ((1,), (1,)))),
             args_of(rand((3, 2, 4)), rand((4, 2, 5))),
             lambda x, y: np.einsum("ibk,kbj->bij", x, y)),
    OpRecord("dot_general_trailing_batch_f32", "dot_general", _dg((((0,), (1,)), ((2,), (0,)))),
             args_of(rand((4, 3, 2)), rand((2, 4, 5))),
             lambda x, y: np.einsum("kib,bkj->bij", x, y)),
    OpRecord("dot_general_contracting_out_of_order_f32", "dot_general",
             _dg((((2, 0), (0, 1)), ((), ()))), args_of(rand((3, 2, 4)), rand((4, 3, 5))),
             lambda x, y: np.einsum("aib,bac->ic", x, y), linear=True),
    OpRecord("dot_general_outer_f32", "dot_general", _dg((((), ()), ((), ()))),
             args_of(rand((3,)), rand((2,))), np.outer),
    OpRecord("dot_general_zero_contraction_f32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 0)), rand((0, 2))), lambda x, y: x @ y),
    OpRecord("dot_general_preferred_i32_from_i8", "dot_general",
             _dg((((1,), (0,)), ((), ())), preferred_element_type=np.int32),
             args_of(rand((3, 4), np.int8), rand((4, 2), np.int8)),
             lambda x, y: x.astype(np.int32) @ y.astype(np.int32)),
    OpRecord("dot_general_preferred_f32_from_bf16", "dot_general",
             _dg((((1,), (0,)), ((), ())), preferred_element_type=np.float32),
             args_of(rand((3, 4), ml_dtypes.bfloat16), rand((4, 2), ml_dtypes.bfloat16)),
             lambda x, y: x.astype(np.float32) @ y.astype(np.float32), grad_order=0),
    OpRecord("dot_general_mixed_f32_i32", "dot_general", _dg((((1,), (0,)), ((), ()))),
             args_of(rand((3, 4)), rand((4, 2), np.int32)),
             lambda x, y: x @ y.astype(np.float32)),
    OpRecord("dot_general_mixed_bool_i32", "dot_general", _dg((((0,), (1,)), ((), ()))),
             args_of(rand((4, 3), np.bool_), rand((2, 4), np.int32)),
             lambda x, y: np.einsum("ki,jk->ij", x.astype(np.int32), y)),
]
