"""Multi-device calls return once their work is queued (JAX's asynchronous dispatch); run with 4
CPU devices by test_async_dispatch.py. Each check prints `name: ok`; a regression of the launch
ordering hangs the devices in a collective, which XLA turns into an abort after 40 s."""
import threading

import numpy as np

import revax
from revax.sharding import NamedSharding, PartitionSpec as P
from tests.sharding.children import auto_mesh

mesh = auto_mesh((4,), ("x",))
split = NamedSharding(mesh, P("x"))


def check(name, got, want, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(got), want, rtol=rtol)
  print(f"{name}: ok")


# Two programs with all-gathers, the second queued while the first computes its input: launches
# that shared XLA's launch id, or ran two at once, met in one rendezvous and hung.
w_np = np.linspace(0.5, 1.5, 1024, dtype=np.float32)
w = revax.device_put(w_np, split)
outer = revax.jit(lambda a: (a @ a.T).sum(1))
for _ in range(150):
  v = outer(w.reshape(1024, 1))  # the eager reshape is a launch of its own
check("chain of collective launches", v, (w_np[:, None] @ w_np[None, :]).sum(1), rtol=1e-4)

# A chain through donated arguments: each call consumes the previous call's result.
halve = revax.jit(lambda a: a * 0.5 + 1.0, donate_argnums=0)
z = revax.device_put(np.zeros((64, 8), np.float32), split)
for _ in range(60):
  z = halve(z)
check("donated chain", z, np.full((64, 8), 2.0, np.float32))

# Arguments deleted (or dropped) right after the call returns: the runtime keeps them alive
# until the launch is done.
total = revax.jit(lambda a: a.sum(0))
x_np = (np.arange(4096 * 16) % 97).astype(np.float32).reshape(4096, 16)  # exact sums
x = revax.device_put(x_np, split)
s = total(x)
x.delete()
check("argument deleted after dispatch", s, x_np.sum(0), rtol=1e-5)
s = total(revax.device_put(x_np, split))  # a temporary argument, freed at once
check("temporary argument", s, x_np.sum(0), rtol=1e-5)

# Readiness: is_ready() is a bool, True once block_until_ready returned.
r = total(revax.device_put(x_np, split))
assert isinstance(r.is_ready(), bool)
assert r.block_until_ready().is_ready() is True
print("is_ready: ok")

# Launches from several threads at once, each of another program with collectives.
programs = [(outer, w.reshape(1024, 1), (w_np[:, None] @ w_np[None, :]).sum(1)),
            (total, revax.device_put(x_np, split), x_np.sum(0)),
            (revax.jit(lambda a: a.reshape(-1)[::-1]), revax.device_put(x_np, split),
             x_np.reshape(-1)[::-1])]
errors = []


def work(fn, arg, want):
  try:
    outs = [fn(arg) for _ in range(40)]
    for o in outs:
      np.testing.assert_allclose(np.asarray(o), want, rtol=1e-4)
  except Exception as e:  # noqa: BLE001 (reported below)
    errors.append(e)


threads = [threading.Thread(target=work, args=p) for p in programs]
for t in threads:
  t.start()
for t in threads:
  t.join()
assert not errors, errors
print("threads: ok")
print("ASYNC DONE")
