"""Where does XLA:TPU lose a NaN's sign in a float16/bfloat16 total-order comparison? Asks one
library (argument: jax or revax) on the chip, in its own process:

    python tests/tpu/probe_total_order.py jax; python tests/tpu/probe_total_order.py revax

For float16 and bfloat16 it prints the bits of -NaN (a) sent as uint16 and bitcast to the float
type and back inside one program, (b) sent as the float type and bitcast to uint16 in a program,
(c) sent as the float type and returned unchanged, and (d) the library's total-order equality
and less-than of [-NaN, +NaN, -inf] against [+NaN, -NaN, -NaN] under jit."""
import sys

import ml_dtypes
import numpy as np

lib = sys.argv[1]
if lib == "jax":
  import jax
  from jax import lax
  from jax._src.lax import lax as lax_internal
  eq_to, lt_to = lax_internal.eq_to_p, lax_internal.lt_to_p
  jit, put, platform = jax.jit, jax.device_put, jax.devices()[0].platform
else:
  import revax as jax
  from revax import lax
  eq_to, lt_to = lax.eq_to_p, lax.lt_to_p
  jit, put, platform = jax.jit, jax.device_put, jax.devices()[0].platform
print(lib, "on", platform)
for dtype in (np.float16, ml_dtypes.bfloat16):
  name = np.dtype(dtype).name
  neg_nan = np.array([-np.nan, np.nan, -np.inf], np.float32).astype(dtype)
  bits = neg_nan.view(np.uint16)
  print(name, "host bits", [hex(b) for b in bits])
  tries = {
      "a u16->f->u16 in jit": lambda: jit(lambda b: lax.bitcast_convert_type(
          lax.bitcast_convert_type(b, dtype), np.uint16))(put(bits)),
      "b f->u16 in jit": lambda: jit(lambda v: lax.bitcast_convert_type(v, np.uint16))(
          put(neg_nan)),
      "c f round trip": lambda: np.asarray(put(neg_nan)).view(np.uint16),
      "d eq_to": lambda: jit(lambda a, b: eq_to.bind(a, b))(
          neg_nan, np.array([np.nan, -np.nan, -np.nan], np.float32).astype(dtype)),
      "d lt_to": lambda: jit(lambda a, b: lt_to.bind(a, b))(
          neg_nan, np.array([np.nan, -np.nan, -np.nan], np.float32).astype(dtype)),
  }
  for label, f in tries.items():
    try:
      out = np.asarray(f())
      shown = [hex(int(b)) for b in out] if out.dtype == np.uint16 else out.tolist()
      print(name, label, shown)
    except Exception as e:  # noqa: BLE001 - the probe reports what happened
      print(name, label, "raised", type(e).__name__, str(e).splitlines()[0][:200])
