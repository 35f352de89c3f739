"""XLA tokens as values: create_token and after_all.

A token (type `Tok` in jaxprs, `!stablehlo.token` in StableHLO) carries no data; XLA orders
the side-effecting operations that consume and produce tokens. `create_token` makes a token
with no precondition, `after_all` one that follows all of its operands. Outside jit both run
as compiled programs (there is no host value of a token) and return `Token`s holding the
token's buffer; jitted functions take and return them.

Each primitive is one block: its public wrapper, then its rules, then their registration.
"""
from __future__ import annotations

from revax._src.core.avals import AbstractToken, abstract_token
from revax._src.core.trace import Primitive
from revax._src.interpreters import ad, batching, mlir
from revax._src.interpreters import invertible as inv

__all__ = ["create_token", "after_all", "create_token_p", "after_all_p"]


# --- create_token --------------------------------------------------------------------------------
def create_token(_=None):
  """Creates an XLA token value with no preconditions for sequencing effects.

  Experimental.

  The argument is ignored. It exists for backward compatibility.

  Args:
    _: ignored.

  Returns:
    A token (a `Token` outside jit, a value of type `Tok` under a transformation).

  Example:
    >>> revax.make_jaxpr(lambda: lax.create_token())()
    { lambda ; . let a:Tok = create_token  in (a,) }
  """
  return create_token_p.bind()


def _create_token_abstract_eval(*operands):
  return abstract_token


def _create_token_lower(ctx, *operands):
  return ctx.fb.op("stablehlo.create_token", [], [mlir.TOKEN_TYPE])


def _create_token_batch(vals, dims, **params):
  return create_token_p.bind(*vals), batching.not_mapped  # (its operands are ignored)


create_token_p = Primitive("create_token")
create_token_p.def_abstract_eval(_create_token_abstract_eval)
batching.primitive_batchers[create_token_p] = _create_token_batch
mlir.register_lowering(create_token_p, _create_token_lower)
ad.not_differentiable(create_token_p, "its output is a token, which has no tangent")
inv.not_invertible(create_token_p, "its output is a token, which holds no value")


# --- after_all -----------------------------------------------------------------------------------
def after_all(*operands):
  """Merges one or more XLA token values. Experimental.

  Wraps the XLA after all operator.

  Args:
    *operands: tokens (none at all gives a token with no precondition).

  Returns:
    A token ordered after every operand.

  Raises:
    TypeError: an operand is not a token.

  Example:
    >>> revax.make_jaxpr(lambda t: lax.after_all(t, lax.create_token()))(lax.create_token())
    { lambda ; a:Tok. let b:Tok = create_token ; c:Tok = after_all a b in (c,) }
  """
  return after_all_p.bind(*operands)


def _after_all_abstract_eval(*operands):
  if any(type(x) is not AbstractToken for x in operands):
    raise TypeError("Arguments to after_all must be tokens")
  return abstract_token


def _after_all_lower(ctx, *operands):
  return ctx.fb.op("stablehlo.after_all", operands, [mlir.TOKEN_TYPE])


def _after_all_batch(vals, dims, **params):
  # a token is never batched: a batched operand is an array, which the abstract evaluation
  # refuses with its TypeError
  return after_all_p.bind(*vals), batching.not_mapped


after_all_p = Primitive("after_all")
after_all_p.def_abstract_eval(_after_all_abstract_eval)
batching.primitive_batchers[after_all_p] = _after_all_batch
mlir.register_lowering(after_all_p, _after_all_lower)
ad.not_differentiable(after_all_p, "its operands and output are tokens, which have no tangents")
inv.not_invertible(after_all_p, "its output is a token, which holds no value")
