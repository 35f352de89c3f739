"""revax vs jax on one TPU chip: a transformer LM training step, its first call, and a tiny
jitted call. Each library runs in its own process (one program holds the chip, and two XLA
runtimes in one process bias each other), alternating, and the same source text drives both.

    python benchmarks/bench_tpu.py OUT.md [PAIRS]      # the driver: writes a markdown table
    python benchmarks/bench_tpu.py --lib revax|jax     # one measurement, one JSON line

The step: 12 layers, d_model 1024, 16 heads, sequence 1024, batch 8, vocabulary 8192, bf16
compute with f32 parameters, SGD; timed as the median of 10 steps after a warm-up, each step
blocked on; then a training loop of 100 steps that reads the loss every 10th (issue 31), timed
per step over the whole loop. The tiny call: 2000 chained calls of jit(lambda x: x + 1) on a
scalar, then one wait. Before building the step each process starts its compiler with a tiny
jitted call (`start_compiler`, timed on its own): jax starts its compiler while building the
parameters (it compiles eager operations) and revax does not (NumPy on host values), so the
step's first call would otherwise carry libtpu's one-time start in revax only. revax's persistent
compilation cache is off in the children (jax has none by default): every first call compiles.
"""
import json
import os
import statistics
import subprocess
import sys
import time

LAYERS, D, HEADS, SEQ, BATCH, VOCAB = (12, 1024, 16, 1024, 8, 8192) if not os.environ.get(
    "BENCH_TPU_SMALL") else (2, 64, 4, 32, 2, 128)


def build(lib: str):
  """The library's modules, the jitted training step, its parameters and a batch of tokens."""
  if lib == "jax":
    import jax
    import jax.numpy as jnp
  else:
    import revax as jax
    import revax.numpy as jnp
  import numpy as np

  def init(key):
    keys = jax.random.split(key, 2 + 4 * LAYERS)
    normal = lambda k, shape, scale: jax.random.normal(k, shape, jnp.float32) * scale  # noqa
    params = {"embed": normal(keys[0], (VOCAB, D), 0.02), "out": normal(keys[1], (D, VOCAB), 0.02),
              "layers": []}
    for i in range(LAYERS):
      k = keys[2 + 4 * i: 6 + 4 * i]
      params["layers"].append({
          "qkv": normal(k[0], (D, 3 * D), D ** -0.5), "o": normal(k[1], (D, D), D ** -0.5),
          "w1": normal(k[2], (D, 4 * D), D ** -0.5), "w2": normal(k[3], (4 * D, D), (4 * D) ** -0.5),
          "ln1": jnp.ones(D), "ln2": jnp.ones(D)})
    return params

  def norm(x, scale):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return (x32 * scale).astype(jnp.bfloat16)

  def block(x, p):
    b, s, _ = x.shape
    h = norm(x, p["ln1"])
    qkv = (h @ p["qkv"].astype(jnp.bfloat16)).reshape(b, s, 3, HEADS, D // HEADS)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / np.sqrt(D // HEADS)
    mask = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(mask, scores, -1e9)
    attn = jax.nn.softmax(scores, axis=-1).astype(jnp.bfloat16)
    out = jnp.einsum("bhqk,bkhd->bqhd", attn, v).reshape(b, s, D)
    x = x + out @ p["o"].astype(jnp.bfloat16)
    h = norm(x, p["ln2"])
    h = jax.nn.gelu(h @ p["w1"].astype(jnp.bfloat16))
    return x + h @ p["w2"].astype(jnp.bfloat16)

  def loss_fn(params, tokens):
    x = params["embed"].astype(jnp.bfloat16)[tokens[:, :-1]]
    for p in params["layers"]:
      x = block(x, p)
    logits = (x @ params["out"].astype(jnp.bfloat16)).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    labels = tokens[:, 1:]
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

  @jax.jit
  def step(params, tokens):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
    return loss, jax.tree_util.tree_map(lambda p, g: p - 1e-2 * g, params, grads)

  params = init(jax.random.PRNGKey(0))
  tokens = jax.random.randint(jax.random.PRNGKey(1), (BATCH, SEQ + 1), 0, VOCAB)
  jax.block_until_ready((params, tokens))
  return jax, jnp, step, params, tokens


def start_compiler(lib_name: str) -> float:
  """Seconds of the library's first jitted call of a tiny program (x + 1 on a float32 scalar):
  the backend's and the compiler's one-time start (libtpu: about 8 s), which the step's first
  call must not carry for one library and not the other (jax compiles its eager operations, so
  building the parameters starts its compiler; revax computes eager operations on host values
  with NumPy)."""
  import numpy as np
  lib = __import__(lib_name)
  start = time.perf_counter()
  lib.block_until_ready(lib.jit(lambda x: x + 1)(np.float32(1)))
  return time.perf_counter() - start


def measure(lib: str) -> dict:
  compiler_start = start_compiler(lib)
  jax, jnp, step, params, tokens = build(lib)
  start = time.perf_counter()
  loss, params = step(params, tokens)
  jax.block_until_ready(loss)
  first = time.perf_counter() - start
  losses, times = [float(loss)], []
  for _ in range(10):
    start = time.perf_counter()
    loss, params = step(params, tokens)
    jax.block_until_ready(loss)
    times.append(time.perf_counter() - start)
    losses.append(float(loss))
  # issue 31's training loop: 100 steps, the loss read (a wait) every 10th step
  start = time.perf_counter()
  for i in range(100):
    loss, params = step(params, tokens)
    if i % 10 == 9:
      losses.append(float(loss))
  jax.block_until_ready(params)
  loop_ms = (time.perf_counter() - start) / 100 * 1e3
  tiny = jax.jit(lambda x: x + 1)
  x = tiny(jnp.zeros(()))
  jax.block_until_ready(x)
  start = time.perf_counter()
  for _ in range(2000):
    x = tiny(x)
  jax.block_until_ready(x)
  tiny_us = (time.perf_counter() - start) / 2000 * 1e6
  step_s = statistics.median(times)
  flops = 6 * BATCH * SEQ * (LAYERS * 12 * D * D + 2 * D * VOCAB) + LAYERS * 12 * BATCH * SEQ * SEQ * D
  return {"lib": lib, "device": str(jax.devices()[0].device_kind), "step_ms": step_s * 1e3,
          "tflops": flops / step_s / 1e12, "first_call_s": first, "loop_step_ms": loop_ms,
          "compiler_start_s": compiler_start,
          "tiny_call_us": tiny_us,
          "losses": losses[:4]}


def main() -> None:
  if sys.argv[1] == "--lib":
    print(json.dumps(measure(sys.argv[2])), flush=True)
    return
  out, pairs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
  rows = []
  for _ in range(pairs):
    for lib in ("jax", "revax"):
      done = subprocess.run([sys.executable, __file__, "--lib", lib], capture_output=True,
                            text=True, timeout=280,
                            env=dict(os.environ, REVAX_COMPILATION_CACHE="0"))
      lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
      if not lines:
        print(lib, "failed:", done.stderr[-2000:], flush=True)
        continue
      rows.append(json.loads(lines[-1]))
      print(lines[-1], flush=True)
  by = {lib: [r for r in rows if r["lib"] == lib] for lib in ("jax", "revax")}
  med = lambda lib, key: statistics.median(r[key] for r in by[lib])  # noqa: E731
  table = ["| measurement | revax | jax | revax / jax |", "|---|---|---|---|"]
  if by["jax"] and by["revax"]:
    for key, unit in (("step_ms", "ms"), ("loop_step_ms", "ms"), ("compiler_start_s", "s"),
                      ("first_call_s", "s"), ("tiny_call_us", "us")):
      r, j = med("revax", key), med("jax", key)
      table.append(f"| {key} | {r:.3g} {unit} | {j:.3g} {unit} | {r / j:.2f}x |")
    table.append(f"| TFLOP/s of the step | {med('revax', 'tflops'):.1f} | "
                 f"{med('jax', 'tflops'):.1f} | |")
    table.append(f"| first losses | {by['revax'][0]['losses']} | {by['jax'][0]['losses']} | |")
  text = (f"Chip: {rows[0]['device'] if rows else '?'}; {pairs} alternating pair(s) of processes "
          "(jax first), medians; `python benchmarks/bench_tpu.py OUT.md " f"{pairs}`.\n\n"
          + "\n".join(table) + "\n")
  open(out, "w").write(text)
  print(text)


if __name__ == "__main__":
  main()
