"""Griffe extension for the API reference: an Args entry that documents several parameters at
once (`in_shardings, out_shardings: ...`, the style of JAX's docstrings and revax's) becomes one
entry per parameter, each with the whole description, so the reference lists every parameter
of the signature once, with its own default, instead of one "required" parameter named
"in_shardings, out_shardings" that the signature does not have.

mkdocs.yml loads it (`extensions:` of the mkdocstrings handler); tests/docs/test_docs.py tests
`split_grouped_params` and the rendered page of `revax.jit`. Works with griffe 1.x and 2.x
(it only rewrites the docstring's text before griffe parses it).
"""
from __future__ import annotations

import re

from griffe import Extension

_SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|"
                      r"Other Parameters|Attributes):\s*$")
_NAME = r"\*{0,2}[A-Za-z_]\w*"
_GROUPED = re.compile(rf"^(\s*)({_NAME}(?:\s*,\s*{_NAME})+)(\s*(?:\([^)]*\))?\s*:(?:\s.*)?)$")


def _indent(line: str) -> int:
  return len(line) - len(line.lstrip())


def split_grouped_params(text: str) -> str:
  """`a, b: text` inside an Args-like section of a Google-style docstring -> `a: text` and
  `b: text` (continuation lines repeated with each); everything else is left as it is.

  Example:
    >>> print(split_grouped_params("Args:\\n  a, b: two of them,\\n    said once.\\n  c: one."))
    Args:
      a: two of them,
        said once.
      b: two of them,
        said once.
      c: one.
  """
  lines = text.split("\n")
  out: list[str] = []
  i = 0
  section = item = None  # indents of the current section header and of its items
  while i < len(lines):
    line = lines[i]
    header = _SECTION.match(line)
    if header:
      section, item = _indent(line), None
      out.append(line)
      i += 1
      continue
    if section is not None and line.strip():
      if _indent(line) <= section:
        section = None
      elif item is None:
        item = _indent(line)
    grouped = _GROUPED.match(line) if section is not None and _indent(line) == item else None
    if not grouped:
      out.append(line)
      i += 1
      continue
    body = []  # the entry's continuation lines (more indented, or blank inside the entry)
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > item):
      body.append(lines[j])
      j += 1
    while body and not body[-1].strip():
      j -= 1
      body.pop()
    for name in re.split(r"\s*,\s*", grouped.group(2)):
      out.append(grouped.group(1) + name + grouped.group(3))
      out.extend(body)
    i = j
  return "\n".join(out)


class GroupedParams(Extension):
  """Splits grouped parameter entries in every docstring as griffe creates its objects."""

  def on_instance(self, *, obj, **kwargs) -> None:  # griffe 1.x and 2.x call it so
    docstring = getattr(obj, "docstring", None)
    if docstring is not None and docstring.value:
      docstring.value = split_grouped_params(docstring.value)
