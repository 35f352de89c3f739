"""Print the bad-input table of tests/README.md: cases per API area and bad-input class.

    python -m tests.bad_inputs.table
"""
import collections

from tests.bad_inputs import (test_arrays, test_lax, test_nn_random, test_numpy,
                              test_transformations)
from tests.bad_inputs.cases import KINDS

MODULES = [test_transformations, test_lax, test_numpy, test_nn_random, test_arrays]


_TRANSFORM_AREAS = {"value_and_grad": "grad", "jacfwd": "linearize/jacfwd/jacrev/hessian",
                    "jacrev": "linearize/jacfwd/jacrev/hessian",
                    "hessian": "linearize/jacfwd/jacrev/hessian",
                    "linearize": "linearize/jacfwd/jacrev/hessian",
                    "make_jaxpr": "make_jaxpr/eval_shape", "eval_shape": "make_jaxpr/eval_shape",
                    "invertible": "invertible/custom_ivjp", "custom_ivjp": "invertible/custom_ivjp"}
_LAX_FAMILIES = {
    "elementwise": "add exp sin bitwise_and shift_left rem atan2 complex integer_pow",
    "conversion": "convert_element_type bitcast_convert_type",
    "shapes": "reshape transpose broadcast_in_dim broadcast squeeze expand_dims rev pad "
              "concatenate iota full",
    "slicing, gather/scatter": "slice dynamic_slice dynamic_update_slice gather scatter_add",
    "dot": "dot_general dot",
    "reductions": "reduce_sum reduce_and argmax reduce",
    "cumulative, sorting": "cumsum cummax sort sort_key_val top_k",
    "select_n, clamp": "select_n clamp",
    "windows": "reduce_window padtype_to_pads",
    "convolution": "conv",
    "control flow": "cond switch while_loop scan fori_loop",
}
_NUMPY_FAMILIES = {
    "creation": "asarray array astype zeros ones full arange linspace eye identity",
    "shapes": "reshape transpose squeeze expand_dims moveaxis swapaxes broadcast_to "
              "broadcast_shapes broadcast_arrays concatenate stack split array_split repeat tile",
    "reductions, sorting": "sum mean max argmax cumsum count_nonzero ptp sort argsort nonzero",
    "contractions": "matmul dot tensordot einsum outer",
    "element-wise": "add where isclose invert left_shift round result_type promote_types",
    "take": "take take_along_axis",
}


def _family(table, head):
  return next(f for f, names in table.items() if head in names.split())


def area(module, case) -> str:
  head = case.name.split("/")[0]
  if module is test_transformations:
    return _TRANSFORM_AREAS.get(head, head)
  if module is test_lax:
    return f"revax.lax: {_family(_LAX_FAMILIES, head)}"
  if module is test_numpy:
    if head == "where" and "traced" in case.name:
      head = "nonzero"
    return f"revax.numpy: {_family(_NUMPY_FAMILIES, head)}"
  if head in ("nn", "random"):
    return f"revax.{head}"
  return "device_put" if head == "device_put" else "revax.Array (conversion, indexing, .at)"


def rows():
  counts = collections.OrderedDict()
  for module in MODULES:
    for c in module.CASES:
      counts.setdefault(area(module, c), collections.Counter())[c.kind] += 1
  return counts


def main():
  counts = rows()
  kinds = [k for k in KINDS if any(k in c for c in counts.values())]
  print("| area | " + " | ".join(kinds) + " | cases | vs JAX |")
  print("|---" * (len(kinds) + 3) + "|")
  compared = collections.Counter()
  for module in MODULES:
    for c in module.CASES:
      compared[area(module, c)] += c.jax is True
  for name, counter in counts.items():
    cells = [str(counter[k]) if counter[k] else "" for k in kinds]
    print(f"| {name} | " + " | ".join(cells) + f" | {sum(counter.values())} | {compared[name]} |")
  total = collections.Counter()
  for counter in counts.values():
    total.update(counter)
  print("| **all** | " + " | ".join(str(total[k]) for k in kinds) +
        f" | **{sum(total.values())}** | {sum(compared.values())} |")


if __name__ == "__main__":
  main()
