"""Ask jax itself on the chip what XLA:TPU does with the select_and_scatter case of
tests/lax/test_primitive_objects.py (window (1, 2) over a 3x4 operand: the window lies in the
two minor-most dimensions). Run on a TPU machine with jax installed, no JAX_PLATFORMS:

    python tests/tpu/probe_select_and_scatter.py

Prints jax's platform and either its result or the exception's type and first line."""
import numpy as np

import jax
from jax._src.lax.windowed_reductions import _select_and_scatter

F = np.arange(12, dtype=np.float32).reshape(3, 4)
print("jax", jax.__version__, "on", jax.devices()[0].platform)
for how in ("eager", "jit"):
  f = lambda x, u: _select_and_scatter(x, jax.lax.ge, (1, 2), (1, 2), ((0, 0), (0, 0)),
                                       u[:, :2], np.float32(0), jax.lax.add)
  try:
    out = (jax.jit(f) if how == "jit" else f)(F, F)
    print(how, "result", np.asarray(out).tolist())
  except Exception as e:  # noqa: BLE001 - the probe reports what jax raised
    print(how, "raised", type(e).__name__, str(e).splitlines()[0][:300])
