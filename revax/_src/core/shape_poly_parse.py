"""The parser of symbolic shapes (`"b, 2*b, ..."`), JAX's syntax and error messages.

A shape is a comma-separated list of dimension expressions, optionally in parentheses; `_` and
`...` take sizes from a `like` shape. An expression is a sum of terms (`+`, `-`), a term a
product (`*`) of factors, each optionally raised to an integer power (`^`); a factor is an
integer, a variable (a name), or `floordiv(e1, e2)`, `mod(e1, e2)`, `max(e1, e2)`,
`min(e1, e2)`.
"""
from __future__ import annotations

import io
import tokenize

from revax._src.core import shape_poly as sp

__all__ = ["parse_dims"]

_OPS = (sp.MOD, sp.FLOORDIV, sp.MAX, sp.MIN)
_FOLLOW_SHAPE = (tokenize.ENDMARKER, tokenize.RPAR)
_FOLLOW_EXPR = _FOLLOW_SHAPE + (tokenize.COMMA,)
_FOLLOW_TERM = _FOLLOW_EXPR + (tokenize.PLUS, tokenize.MINUS)


def parse_dims(spec: str, like, spec_repr: str, scope) -> tuple:
  """The dimensions of the shape `spec` (ints and DimExprs of `scope`).

  Raises:
    ValueError: a syntax error, or placeholders that `like` cannot fill.
  """
  return _Parser(spec, like, spec_repr, scope).parse()


class _Parser:

  def __init__(self, spec, like, spec_repr, scope):
    self.spec, self.like, self.spec_repr, self.scope = spec, like, spec_repr, scope
    self.dims: list = []

  def parse(self):
    self.toks = tokenize.tokenize(io.BytesIO(self.spec.encode("utf-8")).readline)
    # an unclosed parenthesis escapes as tokenize.TokenError, as in JAX
    tok = self.consume(self.next_tok(), tokenize.ENCODING)
    shape, tok = self.shape(tok)
    self.expect(tok, [tokenize.ENDMARKER])
    return shape

  def add_dim(self, e, tok):
    if e is None:
      raise self.err(tok, f"unexpected placeholder for unknown dimension; like={self.like}")
    if sp.is_constant_dim(e) and self.like is not None:
      if e != self.like[len(self.dims)]:
        raise self.err(tok, f"different size {e} for known dimension; like={self.like}")
    self.dims.append(e)

  def err(self, tok, detail):
    msg = (f"syntax error in symbolic shape {self.spec_repr} in dimension {len(self.dims)}: "
           f"{detail}. ")
    if tok is not None:
      msg += f"Parsed '{tok.line[:tok.start[1]]}', remaining '{tok.line[tok.start[1]:]}'."
    return ValueError(msg)

  def next_tok(self):
    while True:
      try:
        t = next(self.toks)
      except StopIteration:
        raise self.err(None, "unexpected end of string") from None
      if t.exact_type not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
        return t

  def expect(self, tok, expected):
    if tok.exact_type not in expected:
      raise self.err(tok, "expecting one of {" + ", ".join(tokenize.tok_name[t] for t in expected)
                     + "} but found " + tokenize.tok_name[tok.exact_type])

  def consume(self, tok, expected):
    self.expect(tok, [expected])
    return self.next_tok()

  def integer(self, tok):
    self.expect(tok, [tokenize.NUMBER])
    try:
      val = int(tok.string)
    except ValueError:
      raise self.err(tok, f"expecting integer, found {tok.string}") from None
    return val, self.next_tok()

  def shape(self, tok):
    if tok.exact_type == tokenize.LPAR:
      res, tok = self.shape(self.next_tok())
      return res, self.consume(tok, tokenize.RPAR)
    while tok.exact_type not in _FOLLOW_SHAPE:
      is_ellipsis = tok.exact_type == tokenize.ELLIPSIS
      is_blank = tok.exact_type == tokenize.NAME and tok.string == "_"
      if is_ellipsis or is_blank:
        if self.like is None:
          raise self.err(tok, "spec contains ... but no 'like' shape was given")
        need = len(self.dims) + (0 if is_ellipsis else 1)
        if len(self.like) < need:
          raise self.err(tok, f"cannot resolve placeholder '{tok.string}' because we parsed "
                         f"{len(self.dims)} already and 'like' shape has only "
                         f"{len(self.like)} dimensions")
      if is_ellipsis:
        for d in self.like[len(self.dims):]:
          self.add_dim(d, tok)
        tok = self.next_tok()
        break
      if is_blank:
        e, tok = self.like[len(self.dims)], self.next_tok()
      else:
        e, tok = self.expr(tok)
      self.add_dim(e, tok)
      if tok.exact_type in _FOLLOW_SHAPE:
        break
      tok = self.consume(tok, tokenize.COMMA)
    return tuple(self.dims), tok

  def expr(self, tok):
    negate = tok.exact_type == tokenize.MINUS
    if tok.exact_type in (tokenize.MINUS, tokenize.PLUS):
      tok = self.next_tok()
    acc = None
    while True:
      t, tok = self.term(tok)
      t = -t if negate else t
      acc = t if acc is None else acc + t
      if tok.exact_type in _FOLLOW_EXPR:
        return acc, tok
      negate = tok.exact_type == tokenize.MINUS
      self.expect(tok, [tokenize.PLUS, tokenize.MINUS])
      tok = self.next_tok()

  def term(self, tok):
    acc = None
    while True:
      f, tok = self.factor(tok)
      if tok.exact_type == tokenize.CIRCUMFLEX:
        tok = self.next_tok()
        self.expect(tok, [tokenize.NUMBER])
        power, tok = self.integer(tok)
        f = f ** power
      acc = f if acc is None else acc * f
      if tok.exact_type in _FOLLOW_TERM:
        return acc, tok
      tok = self.consume(tok, tokenize.STAR)

  def factor(self, tok):
    if tok.exact_type == tokenize.NAME:
      if tok.string in _OPS:
        return self.binary_op(tok.string, self.next_tok())
      return sp.DimExpr._from_var(tok.string, self.scope), self.next_tok()
    sign = 1
    if tok.exact_type == tokenize.MINUS:
      sign = -1
      tok = self.next_tok()
      self.expect(tok, [tokenize.NUMBER])
    if tok.exact_type == tokenize.NUMBER:
      v, tok = self.integer(tok)
      return v * sign, tok
    self.expect(tok, [tokenize.NAME, tokenize.MINUS, tokenize.NUMBER])
    raise AssertionError("unreachable")

  def binary_op(self, op, tok):
    tok = self.consume(tok, tokenize.LPAR)
    e1, tok = self.expr(tok)
    tok = self.consume(tok, tokenize.COMMA)
    e2, tok = self.expr(tok)
    tok = self.consume(tok, tokenize.RPAR)
    if op == sp.MAX:
      return sp.max_dim(e1, e2), tok
    if op == sp.MIN:
      return sp.min_dim(e1, e2), tok
    if not isinstance(e1, sp.DimExpr) and not isinstance(e2, sp.DimExpr):
      return (e1 // e2 if op == sp.FLOORDIV else e1 % e2), tok
    return sp.DimExpr._from_operation(op, e1, e2, self.scope), tok
