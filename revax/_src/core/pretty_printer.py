"""A Wadler-Lindig pretty printer: documents of text, breaks, groups and nesting, laid out to a
width. The jaxpr printer (jaxpr.py) builds its text from these documents, as JAX's does
(jax/_src/pretty_printer.py), so that its lines break where JAX's break.

The layout is JAX's (that of its C++ printer, "strictly pretty" after Lindig): a `group` prints
flat, every break inside it as its text, when the group itself, flat, fits in the width left at
the column where it starts (what follows the group is not counted); otherwise its own breaks
become newlines indented to the nesting in force there, and the groups inside it choose for
themselves in turn. Breaks outside every group are newlines.
"""
from __future__ import annotations

from collections.abc import Iterable


class Doc:
  """A document; `a + b` is their concatenation, `str(doc)` its layout in 80 columns."""
  __slots__ = ("_width",)

  def __add__(self, other: Doc) -> Doc:
    return concat([self, other])

  def __str__(self) -> str:
    return self.format()

  def format(self, width: int = 80) -> str:
    return _format(self, width)

  def flat_width(self) -> int:
    """The document's length printed on one line (breaks as their text); cached, since a
    group's is asked once for each enclosing group that breaks."""
    try:
      return self._width
    except AttributeError:
      self._width = self._measure()
      return self._width

  def _measure(self) -> int:  # each kind of document below measures itself
    raise NotImplementedError(f"{type(self).__name__} does not define _measure")


class _Text(Doc):
  __slots__ = ("text",)

  def __init__(self, text: str):
    self.text = text

  def _measure(self):
    return len(self.text)


class _Concat(Doc):
  __slots__ = ("children",)

  def __init__(self, children):
    self.children = children

  def _measure(self):
    # (iteratively over long chains of concatenations: a jaxpr of thousands of equations)
    total, stack = 0, [self]
    while stack:
      doc = stack.pop()
      if type(doc) is _Concat and not hasattr(doc, "_width"):
        stack.extend(doc.children)
      else:
        total += doc.flat_width()
    return total


class _Break(Doc):
  __slots__ = ("text",)

  def __init__(self, text: str):
    self.text = text

  def _measure(self):
    return len(self.text)


class _Group(Doc):
  __slots__ = ("child",)

  def __init__(self, child: Doc):
    self.child = child

  def _measure(self):
    return self.child.flat_width()


class _Nest(Doc):
  __slots__ = ("n", "child")

  def __init__(self, n: int, child: Doc):
    self.n, self.child = n, child

  def _measure(self):
    return self.child.flat_width()


_NIL = _Concat(())


def nil() -> Doc:
  """The empty document."""
  return _NIL


def text(s: str) -> Doc:
  """Literal text (a single line)."""
  return _Text(s)


def concat(docs: Iterable[Doc]) -> Doc:
  """The documents one after the other."""
  return _Concat(tuple(docs))


def brk(s: str = " ") -> Doc:
  """`s` where its group prints flat, else a newline at the nesting's indentation."""
  return _Break(s)


def group(doc: Doc) -> Doc:
  """`doc` on one line if it fits there from where it starts, else with its breaks as newlines."""
  return _Group(doc)


def nest(n: int, doc: Doc) -> Doc:
  """`doc` with the newlines of its breaks indented `n` further."""
  return _Nest(n, doc)


def join(sep: Doc, docs: Iterable[Doc]) -> Doc:
  """The documents with `sep` between each two."""
  out = []
  for doc in docs:
    if out:
      out.append(sep)
    out.append(doc)
  return out[0] if len(out) == 1 else _Concat(tuple(out))



def _format(doc: Doc, width: int) -> str:
  out: list[str] = []
  col = 0
  stack = [(0, doc)]  # (indentation, document) still to print in break mode, the next last
  while stack:
    indent, d = stack.pop()
    kind = type(d)
    if kind is _Text:
      out.append(d.text)
      col += len(d.text)
    elif kind is _Concat:
      stack.extend((indent, c) for c in reversed(d.children))
    elif kind is _Break:
      out.append("\n" + " " * indent)
      col = indent
    elif kind is _Group:
      w = d.child.flat_width()
      if col + w <= width:  # (the group on one line: its text as it is, every group inside flat)
        _flat(d.child, out)
        col += w
      else:
        stack.append((indent, d.child))
    elif kind is _Nest:
      stack.append((indent + d.n, d.child))
    else:
      raise TypeError(f"not a pretty-printer document: {d!r}")
  return "".join(out)


def _flat(doc: Doc, out: list) -> None:
  """Appends `doc` printed on one line to `out`."""
  stack = [doc]
  while stack:
    d = stack.pop()
    kind = type(d)
    if kind is _Text or kind is _Break:
      out.append(d.text)
    elif kind is _Concat:
      stack.extend(reversed(d.children))
    elif kind is _Group or kind is _Nest:
      stack.append(d.child)
    else:
      raise TypeError(f"not a pretty-printer document: {d!r}")
