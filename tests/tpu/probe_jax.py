"""What jax 0.10.2 does on the TPU for the cases revax got wrong (run on a TPU machine, alone).

Writes what it finds as JSON to the path in argv[1]: output layouts (`Array.format`), the
StableHLO jax emits for a max-pool gradient and for debug.print on TPU, memory figures.
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

found = {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()]}
x = jnp.arange(24.0).reshape(2, 3, 4)
y = jax.jit(lambda x: x.transpose(0, 2, 1))(x)
found["transpose_format"] = str(getattr(y, "format", None))
found["transpose_ok"] = bool(np.array_equal(np.asarray(y), np.arange(24.0).reshape(2, 3, 4)
                                            .transpose(0, 2, 1)))


def maxpool_loss(x):
  return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                               "VALID").sum()


images = jnp.arange(2 * 8 * 8 * 3, dtype=jnp.float32).reshape(2, 8, 8, 3)
lowered = jax.jit(jax.grad(maxpool_loss)).lower(images)
found["maxpool_grad_stablehlo"] = lowered.as_text()
found["maxpool_grad_compiled_hlo"] = lowered.compile().as_text()[:20000]
plane = jnp.arange(64.0).reshape(8, 8)
plane_grad = jax.jit(jax.grad(lambda p: jax.lax.reduce_window(
    p, -jnp.inf, jax.lax.max, (2, 2), (2, 2), "VALID").sum()))
found["maxpool2d_grad_stablehlo"] = plane_grad.lower(plane).as_text()
try:
  found["maxpool2d_grad"] = np.asarray(plane_grad(plane)).tolist()
except Exception as e:  # noqa: BLE001 -- jax 0.10.2 fails this one on a TPU: record it
  found["maxpool2d_grad"] = f"ERROR {type(e).__name__}: {str(e)[:400]}"


def printing(x):
  jax.debug.print("x = {}", x)
  return x * 2


found["debug_print_stablehlo"] = jax.jit(printing).lower(jnp.ones(3)).as_text()
found["pure_callback_stablehlo"] = jax.jit(lambda x: jax.pure_callback(
    lambda v: np.sin(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x)).lower(jnp.ones(3)).as_text()
jax.jit(printing)(jnp.ones(3)).block_until_ready()
dev = jax.devices()[0]
found["memory_stats"] = dev.memory_stats()
big = jax.jit(lambda a: jnp.tanh(a @ a) @ a).lower(jnp.ones((1024, 1024))).compile()
found["memory_analysis"] = str(big.memory_analysis())
json.dump(found, open(sys.argv[1], "w"), indent=1, default=str)
print("jax probe done")
