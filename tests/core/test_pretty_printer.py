"""The Wadler-Lindig document printer the jaxpr text is laid out with: JAX's layout exactly."""
import random

import pytest

from revax._src.core import pretty_printer as pp


def test_group_fits_by_itself_not_by_what_follows():
  params = pp.group(pp.nest(2, pp.text("[") + pp.brk("") + pp.join(pp.brk(), [
      pp.text("x" * 30), pp.text("y" * 30)])) + pp.brk("") + pp.text("]"))
  doc = pp.text("aaaa") + params + pp.text(" " * 40 + "tail")
  assert doc.format(80) == "aaaa[" + "x" * 30 + " " + "y" * 30 + "]" + " " * 40 + "tail"
  assert (pp.text("a" * 20) + params).format(80) == (
      "a" * 20 + "[\n  " + "x" * 30 + "\n  " + "y" * 30 + "\n]")


def test_width_is_inclusive_and_inner_groups_choose_for_themselves():
  line = lambda n: pp.group(pp.text("x" * (n - 40)) + pp.brk() + pp.text("y" * 39))
  assert "\n" not in line(80).format(80) and "\n" in line(81).format(80)
  doc = pp.group(pp.text("A" * 50) + pp.nest(4, pp.brk() + pp.group(
      pp.text("B" * 20) + pp.brk() + pp.text("C" * 20))))
  assert doc.format(80) == "A" * 50 + "\n    " + "B" * 20 + " " + "C" * 20


def test_breaks_outside_groups_are_newlines():
  assert (pp.text("a") + pp.nest(2, pp.brk() + pp.text("b"))).format() == "a\n  b"
  assert pp.join(pp.brk(), []).format() == "" and str(pp.nil()) == ""


def _random_doc(rng, depth=0):
  kind = rng.randrange(6 if depth < 5 else 2)
  if kind == 0:
    return ("text", "x" * rng.randrange(25))
  if kind == 1:
    return ("brk", rng.choice([" ", "", "; "]))
  if kind == 2:
    return ("concat", [_random_doc(rng, depth + 1) for _ in range(rng.randrange(5))])
  if kind == 3:
    return ("group", _random_doc(rng, depth + 1))
  if kind == 4:
    return ("nest", rng.randrange(5), _random_doc(rng, depth + 1))
  return ("join", _random_doc(rng, depth + 1),
          [_random_doc(rng, depth + 1) for _ in range(rng.randrange(4))])


def _build(lib, d):
  kind, *args = d
  if kind in ("text", "brk"):
    return getattr(lib, kind)(args[0])
  if kind == "concat":
    return lib.concat([_build(lib, c) for c in args[0]])
  if kind == "group":
    return lib.group(_build(lib, args[0]))
  if kind == "nest":
    return lib.nest(args[0], _build(lib, args[1]))
  return lib.join(_build(lib, args[0]), [_build(lib, c) for c in args[1]])


def test_random_documents_lay_out_as_jaxs():
  jpp = pytest.importorskip("jax._src.pretty_printer")
  rng = random.Random(0)
  for _ in range(3000):
    d, width = _random_doc(rng), rng.choice([20, 40, 80])
    assert _build(pp, d).format(width) == _build(jpp, d).format(width, use_color=False), d
