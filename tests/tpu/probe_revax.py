"""What revax's runtime sees on a TPU: the layouts XLA gives entry results, whether row-major host
layouts and pinned entry layouts fix the transfers, device memory statistics (argv[1]: JSON out).

Run on a TPU machine with the TPU plugin chosen (PJRT_PLUGIN=<libtpu.so>).
"""
import ctypes as C
import json
import re
import sys
import traceback

import numpy as np

import revax
import revax.numpy as jnp
from revax._src.runtime import pjrt
from revax._src.runtime.client import get_backend

found = {}
backend = get_backend()
api = backend._api
found["backend"] = repr(backend)
found["platform_version"] = backend.platform_version
found["plugin_attributes"] = api.plugin_attributes()


def layout_of(buffer):
  args = api.call("Buffer_GetMemoryLayout", buffer=buffer._ptr)
  return pjrt.read_layout(args.layout)


def fetch_row_major(buffer):
  out = np.empty(buffer.shape, buffer.dtype)
  host = pjrt.HostLayout(len(buffer.shape))
  args = api.call("Buffer_ToHostBuffer", src=buffer._ptr, host_layout=host.address,
                  dst=out.ctypes.data, dst_size=out.nbytes)
  api.await_event(args.event)
  return out


def attempt(name, fn):
  try:
    found[name] = fn()
  except Exception as e:  # noqa: BLE001 -- a probe records every failure and goes on
    found[name] = "ERROR " + "".join(traceback.format_exception_only(e)).strip()[:2000]


x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
want = x.transpose(0, 2, 1)
f = revax.jit(lambda x: x.transpose(0, 2, 1))
text = f.lower(x).as_text()
exe = backend.compile(text)
(out,) = exe.execute([backend.buffer_from_numpy(x)])
attempt("transpose_layout_plain", lambda: layout_of(out))
attempt("transpose_fetch_null_ok", lambda: bool(np.array_equal(out.to_numpy(), want)))
attempt("transpose_fetch_rowmajor_ok", lambda: bool(np.array_equal(fetch_row_major(out), want)))
attempt("input_layout", lambda: layout_of(backend.buffer_from_numpy(x)))

# chained: a non-default-layout output fed to another program
g = revax.jit(lambda y: y + 1.0)
exe_g = backend.compile(g.lower(want).as_text())
attempt("chained_rowmajor_ok", lambda: bool(np.array_equal(
    fetch_row_major(exe_g.execute([out])[0]), want + 1)))
h = revax.jit(lambda y: y.reshape(-1))
exe_h = backend.compile(h.lower(want).as_text())
attempt("chained_reshape_rowmajor_ok", lambda: bool(np.array_equal(
    fetch_row_major(exe_h.execute([out])[0]), want.reshape(-1))))


def pinned(text):
  """The module with mhlo.layout_mode = "default" on every argument and result of @main."""
  head, rest = text.split("func.func public @main(", 1)
  sig, body = rest.split(") -> (", 1)
  results, body = body.split(")", 1) if body.startswith("tensor") else (None, body)
  args = re.sub(r"(%\w+: tensor<[^>]*>)", r'\1 {mhlo.layout_mode = "default"}', sig)
  res = re.sub(r"(tensor<[^>]*>)", r'\1 {mhlo.layout_mode = "default"}', results)
  return head + "func.func public @main(" + args + ") -> (" + res + ")" + body


def pinned_run():
  text2 = pinned(text)
  found["pinned_text"] = text2
  exe2 = backend.compile(text2)
  (out2,) = exe2.execute([backend.buffer_from_numpy(x)])
  return {"layout": layout_of(out2), "null_ok": bool(np.array_equal(out2.to_numpy(), want))}


attempt("transpose_pinned", pinned_run)

# the suite's other reported shapes of the bug
cases = {
    "sort_axis0": (lambda a: jnp.sort(a, axis=0), np.random.RandomState(0).randn(5, 7)
                   .astype(np.float32), lambda a: np.sort(a, axis=0)),
    "dot_batch_middle": (lambda a: revax.lax.dot_general(a, a, (((2,), (2,)), ((1,), (1,)))),
                         np.random.RandomState(1).randn(3, 4, 5).astype(np.float32),
                         lambda a: np.einsum("ibk,jbk->bij", a, a)),
}
for name, (fn, arg, ref) in cases.items():
  def run_case(fn=fn, arg=arg, ref=ref):
    o = backend.compile(revax.jit(fn).lower(arg).as_text()).execute(
        [backend.buffer_from_numpy(arg)])[0]
    return {"layout": layout_of(o),
            "null_ok": bool(np.allclose(o.to_numpy(), ref(arg), rtol=1e-2, atol=1e-2)),
            "rowmajor_ok": bool(np.allclose(fetch_row_major(o), ref(arg), rtol=1e-2, atol=1e-2))}
  attempt(name, run_case)


def device_memory_stats():
  stats = api.call("Device_MemoryStats", device=backend.devices[0]._ptr)
  return {name: getattr(stats, name) for name in pjrt.DEVICE_MEMORY_STATS}


attempt("device_memory_stats", device_memory_stats)
big = revax.jit(lambda a: jnp.tanh(a @ a) @ a).lower(jnp.ones((1024, 1024))).compile()
attempt("memory_analysis", lambda: str(big.memory_analysis()))


def maxpool_loss(x):
  return revax.lax.reduce_window(x, -jnp.inf, revax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                 "VALID").sum()


images = np.arange(2 * 8 * 8 * 3, dtype=np.float32).reshape(2, 8, 8, 3)
attempt("maxpool_grad", lambda: np.asarray(revax.jit(revax.grad(maxpool_loss))(images))
        .sum().item())
json.dump(found, open(sys.argv[1], "w"), indent=1, default=str)
print("revax probe done")
