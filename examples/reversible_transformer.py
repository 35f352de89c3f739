"""A reversible transformer (RevViT / Reformer-style layers) trained with `revax.invertible`, and
the device memory it saves as it deepens.

Each layer couples two streams additively, with attention and an MLP as the two functions,

    y1 = x1 + Attention(LayerNorm(x2))        y2 = x2 + MLP(LayerNorm(y1)),

so its inputs follow from its outputs (`revax.reversible.reversible_block`). With the stack of
layers under `revax.invertible`, reverse mode keeps only the stack's outputs and its weights and
rebuilds every layer's activations while the gradient walks back: the memory of a training step
stops growing with depth, apart from the weights and their gradients. Plain reverse mode stores
every layer's activations (attention probabilities included); `revax.checkpoint` per layer
stores each layer's two inputs and recomputes its insides.

The script
  1. trains a character-level causal language model (the Zen of Python and this file's own text;
     nothing is downloaded) for a few hundred steps with the layers under `revax.invertible`,
     printing the loss with a tqdm progress bar, then samples a line of text from it;
  2. measures the peak memory and the time of one gradient step of the same model against depth
     for plain grad, checkpoint per layer and invertible, each method deepened until it runs out
     of memory (or the last depth asked for), and prints a table;
  3. plots peak memory and step time against depth to a PNG.

Peak memory is XLA's account of the compiled step (temporaries + arguments + outputs), or the
device's `peak_bytes_in_use` where the runtime keeps allocator statistics (TPU) and that is larger
(libtpu's leaves the step's temporaries out); see examples/device_memory.py. Training and each method's sweep run in child processes of this
script (a TPU is held by one process at a time, and its peak only grows within a process);
`--in-process` runs everything in one.

Run:  python examples/reversible_transformer.py [--quick] [--steps N] [--depths 4,8,16]
      [--plot PATH] [--table PATH] [--layers scan|loop] [--no-train] [--in-process]
Sizes are chosen by the platform (`--size tpu|cpu|quick` overrides; `--quick` is `--size quick`,
seconds on a CPU). Needs tqdm and matplotlib (the `examples` extra); revax is the only array
library.
"""
from __future__ import annotations

import argparse
import codecs
import dataclasses
import json
import math
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import device_memory  # noqa: E402

import revax  # noqa: E402
import revax.nn as nn  # noqa: E402
import revax.numpy as rnp  # noqa: E402
from revax import reversible  # noqa: E402
from revax.example_libraries import optimizers  # noqa: E402

METHODS = ("plain", "checkpoint", "invertible")
LABELS = {"plain": "plain grad", "checkpoint": "revax.checkpoint per layer",
          "invertible": "revax.invertible"}


@dataclasses.dataclass(frozen=True)
class Config:
  """Model and run sizes: width, heads, sequence length, batch, training depth and steps, and the
  depths of the memory sweep."""
  width: int
  heads: int
  seq: int
  batch: int
  depth: int
  steps: int
  depths: tuple
  step_size: float = 3e-3
  calls: int = 5


SIZES = {
    # one TPU v5e chip (16 GB): plain grad runs out of memory in the tens of layers, checkpoint
    # per layer in the low hundreds, invertible keeps going (weights + gradients only)
    "tpu": Config(width=512, heads=8, seq=512, batch=32, depth=8, steps=300,
                  depths=(4, 8, 16, 32, 64, 128, 256), calls=5),
    "cpu": Config(width=128, heads=4, seq=64, batch=16, depth=4, steps=200,
                  depths=(2, 4, 8, 16, 32), calls=3),
    "quick": Config(width=32, heads=2, seq=16, batch=8, depth=2, steps=40,
                    depths=(1, 4), step_size=1e-2, calls=2),
}


# --- data ----------------------------------------------------------------------------------------
def corpus() -> str:
  """The Zen of Python and this file's text: a small character-level corpus on every machine."""
  import contextlib
  import io
  with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
    import this
  return codecs.decode(this.s, "rot13") + "\n\n" + pathlib.Path(__file__).read_text()


def encode(text: str):
  """(int32 codes of `text`, the alphabet): characters numbered in sorted order."""
  alphabet = sorted(set(text))
  index = {c: i for i, c in enumerate(alphabet)}
  return np.array([index[c] for c in text], np.int32), alphabet


def batches(codes, seq: int, batch: int, seed: int = 0):
  """Endless random windows of `seq + 1` characters: (inputs, next-character targets)."""
  rng = np.random.default_rng(seed)
  while True:
    starts = rng.integers(0, len(codes) - seq - 1, batch)
    windows = np.stack([codes[s:s + seq + 1] for s in starts])
    yield windows[:, :-1], windows[:, 1:]


# --- the model -----------------------------------------------------------------------------------
def layer_norm(x, eps: float = 1e-5):
  mean = x.mean(-1, keepdims=True)
  centered = x - mean
  return centered * revax.lax.rsqrt((centered * centered).mean(-1, keepdims=True) + eps)


def make_attention(heads: int):
  """F: pre-LayerNorm causal multi-head self-attention of a (batch, seq, width) stream."""
  def attention(p, x):
    b, t, d = x.shape
    h = layer_norm(x) * p["scale"]
    q, k, v = (rnp.reshape(h @ p[name], (b, t, heads, d // heads)) for name in ("q", "k", "v"))
    scores = rnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads)
    causal = np.tril(np.ones((t, t), bool))
    probs = nn.softmax(rnp.where(causal, scores, -1e9), axis=-1)
    out = rnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, t, d)
    return out @ p["o"]
  return attention


def mlp(p, x):
  """G: pre-LayerNorm two-layer GELU MLP, hidden width 4x."""
  return nn.gelu(layer_norm(x) * p["scale"] @ p["w1"]) @ p["w2"]


def init_params(cfg: Config, vocab: int, depth: int, seed: int = 0, scan_layers: bool = True):
  """{'embed', 'pos', 'layers', 'head'}: token and position embeddings, the reversible layers
  and the output projection, drawn on the device. Each layer holds ({q, k, v, o, scale} of F,
  {w1, w2, scale} of G); the layers are stacked along a leading depth axis (for a scan) or a list.
  Output projections are scaled down by sqrt(2 depth) so that deep stacks start near the
  identity."""
  d = cfg.width

  def draw(key):
    keys = iter(revax.random.split(key, 9))
    normal = lambda shape, std: revax.random.normal(next(keys), shape) * std
    out = 1 / np.sqrt(2 * depth)
    ones = rnp.ones((depth, d))
    f = {"q": normal((depth, d, d), d ** -0.5), "k": normal((depth, d, d), d ** -0.5),
         "v": normal((depth, d, d), d ** -0.5), "o": normal((depth, d, d), out * d ** -0.5),
         "scale": ones}
    g = {"w1": normal((depth, d, 4 * d), d ** -0.5),
         "w2": normal((depth, 4 * d, d), out * (4 * d) ** -0.5), "scale": ones}
    return {"embed": normal((vocab, d), 0.02), "pos": normal((cfg.seq, d), 0.02),
            "layers": (f, g), "head": normal((d, vocab), d ** -0.5)}
  params = revax.jit(draw)(revax.random.PRNGKey(seed))
  if not scan_layers:
    params["layers"] = [revax.tree_util.tree_map(lambda w, i=i: w[i], params["layers"])
                        for i in range(depth)]
  return params


def make_loss(cfg: Config, method: str = "invertible", scan_layers: bool = True):
  """`loss(params, inputs, targets)`: mean next-character cross-entropy, with the layers
  differentiated as `method` says ('plain', 'checkpoint' per layer or 'invertible')."""
  block = reversible.reversible_block(make_attention(cfg.heads), mlp)
  stack = reversible.reversible_sequence(block, method=method, scan_layers=scan_layers)

  def logits(params, inputs):
    x = params["embed"][inputs] + params["pos"][:inputs.shape[1]]
    y1, y2 = stack(params["layers"], x, x)  # both streams start as the embedding (RevViT)
    return layer_norm((y1 + y2) / 2) @ params["head"]

  def loss(params, inputs, targets):
    log_probs = nn.log_softmax(logits(params, inputs))
    picked = rnp.take_along_axis(log_probs, targets[..., None], axis=-1)
    return -picked.mean()

  loss.logits = logits
  return loss


# --- training ------------------------------------------------------------------------------------
def train(cfg: Config, codes, vocab: int, *, method: str = "invertible", scan_layers: bool = True,
          steps: int | None = None, progress: bool = True, seed: int = 0):
  """Adam on random windows of the corpus. Returns (trained params, the loss of every step)."""
  steps = cfg.steps if steps is None else steps
  loss = make_loss(cfg, method, scan_layers)
  opt_init, opt_update, get_params = optimizers.adam(cfg.step_size)

  @revax.jit
  def step(i, opt_state, inputs, targets):
    value, grads = revax.value_and_grad(loss)(get_params(opt_state), inputs, targets)
    return value, opt_update(i, grads, opt_state)

  opt_state = opt_init(init_params(cfg, vocab, cfg.depth, seed, scan_layers))
  data = batches(codes, cfg.seq, cfg.batch, seed)
  losses, bar = [], None
  if progress:
    from tqdm import tqdm
    bar = tqdm(total=steps, desc=f"training ({method}, {cfg.depth} layers)", unit="step")
  for i in range(steps):
    value, opt_state = step(i, opt_state, *next(data))
    losses.append(float(value))
    if bar is not None:
      bar.update()
      bar.set_postfix(loss=f"{losses[-1]:.3f}")
  if bar is not None:
    bar.close()
  return get_params(opt_state), losses


def sample(cfg: Config, params, alphabet, prompt: str, length: int, scan_layers: bool = True,
           seed: int = 0) -> str:
  """`length` characters after `prompt`, drawn one at a time from the model (temperature 0.8)."""
  logits = revax.jit(make_loss(cfg, "plain", scan_layers).logits)
  index = {c: i for i, c in enumerate(alphabet)}
  codes = [index.get(c, 0) for c in prompt]
  rng = np.random.default_rng(seed)
  for _ in range(length):
    window = np.array(codes[-cfg.seq:], np.int32)
    window = np.pad(window, (0, cfg.seq - len(window)))  # causal: padding after is never seen
    last = np.asarray(logits(params, window[None]))[0, min(len(codes), cfg.seq) - 1] / 0.8
    p = np.exp(last - last.max())
    codes.append(int(rng.choice(len(p), p=p / p.sum())))
  return "".join(alphabet[c] for c in codes)


# --- memory and time against depth ---------------------------------------------------------------
def measure(cfg: Config, vocab: int, method: str, depth: int, scan_layers: bool = True) -> dict:
  """Peak memory and time of one gradient step (`jit(value_and_grad(loss))`) of a model of
  `depth` layers, or {'oom': message} when it does not fit. Also reports the bytes of the
  weights (their gradients take as many)."""
  loss = make_loss(cfg, method, scan_layers)
  params = revax.device_put(init_params(cfg, vocab, depth, 0, scan_layers))
  inputs, targets = next(batches(np.arange(vocab, dtype=np.int32).repeat(cfg.seq), cfg.seq,
                                 cfg.batch))
  args = (params, revax.device_put(inputs), revax.device_put(targets))
  param_bytes = sum(x.size * x.dtype.itemsize for x in revax.tree_util.tree_leaves(params))
  try:
    result = device_memory.measure_step(revax.jit(revax.value_and_grad(loss)), args,
                                        calls=cfg.calls)
  except Exception as error:  # noqa: BLE001 (only an out-of-memory error is a result)
    if not device_memory.is_out_of_memory(error):
      raise
    return {"oom": str(error).strip().splitlines()[0][:300], "param_bytes": param_bytes}
  result["param_bytes"] = param_bytes
  return result


def sweep_method(cfg: Config, vocab: int, method: str, depths, scan_layers: bool = True,
                 emit=None) -> dict:
  """{depth: measure(...)} at increasing depths, stopping after the first that runs out of
  memory (deeper ones would too). `emit(depth, result)` is called as each one finishes."""
  results = {}
  for depth in sorted(depths):
    results[depth] = measure(cfg, vocab, method, depth, scan_layers)
    if emit is not None:
      emit(depth, results[depth])
    if "oom" in results[depth]:
      break
  return results


# --- processes -----------------------------------------------------------------------------------
# A TPU is held by one process at a time, and its peak_bytes_in_use only grows within a process.
# So by default this script opens no device itself: training runs in one child process and each
# method's sweep in another (its depths increase, and so does its memory, so the peak read after
# each depth is that depth's own). Children print `RESULT <json>` lines; `--in-process` runs
# everything here instead (exact on a CPU, where figures come from each compiled program).
def run_child(args, emit) -> None:
  """Run this script with `args` in a child process: each `RESULT <json list>` line it prints
  goes to `emit(*list)`; everything else passes through (its progress bars share stderr)."""
  command = [sys.executable, os.path.abspath(__file__), *args]
  with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
    for line in child.stdout:
      if line.startswith("RESULT "):
        emit(*json.loads(line[len("RESULT "):]))
      else:
        print(line, end="", flush=True)
  if child.returncode:
    raise RuntimeError(f"child process failed (exit {child.returncode}): {' '.join(command)}")


def _print_result(*values) -> None:
  print("RESULT " + json.dumps(values), flush=True)


def _platform() -> str:
  device = revax.devices()[0]
  return f"{device.device_kind} ({device.platform})"


def resolve_size(size: str | None) -> str:
  """`size`, or by platform when None: 'tpu' on a TPU, else 'cpu' (opens the device)."""
  if size is not None:
    return size
  return "tpu" if revax.devices()[0].platform == "tpu" else "cpu"


def run_training(cfg: Config, size: str, scan_layers: bool, emit) -> None:
  """Train, sample, and `emit('train', report)`: report = {'size', 'platform', 'losses',
  'sample', 'seconds'}."""
  codes, alphabet = encode(corpus())
  print(f"{_platform()}; sizes '{size}': width {cfg.width}, {cfg.heads} heads, sequence "
        f"{cfg.seq}, batch {cfg.batch}, float32; layers in a "
        f"{'scan' if scan_layers else 'Python loop'}", flush=True)
  start = time.perf_counter()
  params, losses = train(cfg, codes, len(alphabet), scan_layers=scan_layers)
  seconds = time.perf_counter() - start
  print(f"reversible transformer, {cfg.depth} layers, {cfg.steps} steps with revax.invertible "
        f"in {seconds:.1f} s: loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} (a uniform "
        f"guess: {np.log(len(alphabet)):.3f})", flush=True)
  text = sample(cfg, params, alphabet, "Beautiful is ", 24 if size == "quick" else 80,
                scan_layers)
  print(f"sample: {text!r}\n", flush=True)
  emit("train", {"size": size, "platform": _platform(), "losses": losses, "sample": text,
                 "seconds": seconds})


def run_sweep(cfg: Config, size: str, method: str, depths, scan_layers: bool, emit) -> None:
  """One method's sweep: `emit('config', {...})`, then `emit('result', method, depth, result)`
  per depth."""
  emit("config", {"size": size, "platform": _platform(), "depths": list(depths)})
  vocab = len(encode(corpus())[1])
  sweep_method(cfg, vocab, method, depths, scan_layers,
               lambda depth, result: emit("result", method, depth, result))


def sweep(depths, *, size: str | None, scan_layers: bool = True, in_process: bool = False,
          progress: bool = True) -> tuple:
  """Every method's sweep, each in its own child process (or here with `in_process`).

  Returns:
    ({(method, depth): result}, the first child's config report {'size', 'platform', 'depths'}).
  """
  bar, results, config = None, {}, {}
  if progress:
    from tqdm import tqdm
    bar = tqdm(total=len(METHODS) * len(depths or SIZES[size or "tpu"].depths),
               desc="gradient step per method and depth", unit="program")

  def emit(kind, *values):
    if kind == "config":
      config.setdefault("report", values[0])
      if bar is not None:
        bar.total = len(METHODS) * len(values[0]["depths"])
    elif kind == "result":
      method, depth, result = values
      results[method, depth] = result
      if bar is not None:
        bar.update()
        bar.set_postfix(method=method, depth=depth)
  for method in METHODS:
    if in_process:
      resolved = resolve_size(size)
      run_sweep(SIZES[resolved], resolved, method, depths or SIZES[resolved].depths,
                scan_layers, emit)
    else:
      run_child(["--child-sweep", method, "--layers", "scan" if scan_layers else "loop"]
                + (["--size", size] if size else [])
                + (["--depths", ",".join(map(str, depths))] if depths else []), emit)
  if bar is not None:
    bar.update(bar.total - bar.n)  # depths skipped after an out-of-memory error
    bar.close()
  return results, config["report"]


def format_table(results, depths, platform: str) -> str:
  """A markdown table: peak memory (GiB or MiB) and step time (ms) per depth and method."""
  big = any(r.get("peak_bytes", 0) > 2 ** 30 for r in results.values())
  unit, scale = ("GiB", 2 ** 30) if big else ("MiB", 2 ** 20)

  def cell(method, depth, key):
    r = results.get((method, depth))
    if r is None:
      return "-"
    if "oom" in r:
      return "out of memory"
    return f"{r['peak_bytes'] / scale:.2f}" if key == "mem" else f"{r['seconds'] * 1e3:.1f}"

  source = next((r["source"] for r in results.values() if "source" in r), "")
  head = (["depth", f"weights ({unit})"] + [f"{LABELS[m]}: peak {unit}" for m in METHODS]
          + [f"{LABELS[m]}: step ms" for m in METHODS])
  lines = [f"Gradient step on {platform}; peak memory from {source}.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for d in depths:
    weights = next((r["param_bytes"] for (m, dd), r in results.items() if dd == d), None)
    lines.append("| " + " | ".join(
        [str(d), "-" if weights is None else f"{weights / scale:.2f}"]
        + [cell(m, d, "mem") for m in METHODS] + [cell(m, d, "time") for m in METHODS]) + " |")
  return "\n".join(lines)


def plot(results, depths, path: str, title: str) -> None:
  """Peak memory and step time against depth, one line per method, an x where a method first
  ran out of memory. Depths double, so the depth axis is logarithmic (base 2); memory and time
  grow linearly in depth, so their axes are linear."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  big = any(r.get("peak_bytes", 0) > 2 ** 30 for r in results.values())
  unit, scale = ("GiB", 2 ** 30) if big else ("MiB", 2 ** 20)
  fig, (mem_ax, time_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
  weights = {d: r["param_bytes"] for (_, d), r in results.items()}
  known = [d for d in depths if d in weights]
  mem_ax.plot(known, [2 * weights[d] / scale for d in known], "--", color="gray",
              label="weights + their gradients")
  for method in METHODS:
    ran = [d for d in depths if "peak_bytes" in results.get((method, d), {})]
    line, = mem_ax.plot(ran, [results[method, d]["peak_bytes"] / scale for d in ran], "o-",
                        label=LABELS[method])
    time_ax.plot(ran, [results[method, d]["seconds"] * 1e3 for d in ran], "o-",
                 color=line.get_color(), label=LABELS[method])
    oom = [d for d in depths if "oom" in results.get((method, d), {})]
    if oom and ran:
      mem_ax.plot(oom, [results[method, ran[-1]]["peak_bytes"] / scale] * len(oom), "x",
                  color=line.get_color(), markersize=10, label=f"{LABELS[method]}: out of memory")
  for ax, ylabel in ((mem_ax, f"peak memory of a gradient step ({unit})"),
                     (time_ax, "gradient step time (ms)")):
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(depths), [str(d) for d in depths])
    ax.set_xlabel("depth (reversible layers)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
  mem_ax.legend(fontsize=8)
  fig.suptitle(title)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


# --- main ----------------------------------------------------------------------------------------
def main(argv=None) -> dict:
  """Run the example (see the module's docstring).

  Returns:
    {'size', 'platform', 'losses', 'sample' (unless --no-train), 'table': {(method, depth):
    result of `measure`}, 'text': the table as markdown}.
  """
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true", help="tiny sizes: seconds on a CPU")
  parser.add_argument("--size", choices=sorted(SIZES), default=None,
                      help="model and sweep sizes (default: tpu on a TPU, else cpu)")
  parser.add_argument("--steps", type=int, default=None, help="training steps")
  parser.add_argument("--depths", default=None, help="depths of the memory sweep, e.g. 4,8,16")
  parser.add_argument("--layers", choices=("scan", "loop"), default="scan",
                      help="layers in a lax.scan (one compile whatever the depth) or unrolled")
  parser.add_argument("--in-process", action="store_true",
                      help="run everything in this process (a device's peak_bytes_in_use then "
                           "only grows from one measurement to the next; exact on a CPU)")
  parser.add_argument("--plot", default="reversible_transformer_memory.png",
                      help="where to save the plot (PNG)")
  parser.add_argument("--table", default=None, help="also write the table (markdown) here")
  parser.add_argument("--no-train", action="store_true", help="only the memory sweep")
  parser.add_argument("--child-sweep", choices=METHODS, help=argparse.SUPPRESS)
  parser.add_argument("--child-train", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  size = "quick" if args.quick else args.size
  depths = tuple(int(d) for d in args.depths.split(",")) if args.depths else None
  scan_layers = args.layers == "scan"

  def config(size):
    cfg = SIZES[size]
    return cfg if args.steps is None else dataclasses.replace(cfg, steps=args.steps)

  if args.child_train or args.child_sweep:  # a child: it opens the device
    size = resolve_size(size)
    if args.child_train:
      run_training(config(size), size, scan_layers, _print_result)
    else:
      run_sweep(config(size), size, args.child_sweep, depths or config(size).depths,
                scan_layers, _print_result)
    return {}

  out = {}
  if not args.no_train:
    reports = {}
    if args.in_process:
      resolved = resolve_size(size)
      run_training(config(resolved), resolved, scan_layers, reports.__setitem__)
    else:
      run_child(["--child-train", "--layers", args.layers] + (["--size", size] if size else [])
                + ([] if args.steps is None else ["--steps", str(args.steps)]),
                reports.__setitem__)
    out.update(reports["train"])
    size = out["size"]
  results, report = sweep(depths, size=size, scan_layers=scan_layers, in_process=args.in_process)
  size, platform, depths = report["size"], report["platform"], tuple(report["depths"])
  cfg = config(size)
  table = format_table(results, depths, platform)
  print(table)
  if args.table:
    pathlib.Path(args.table).write_text(table + "\n")
  plot(results, depths, args.plot, f"reversible transformer on {platform}: width {cfg.width}, "
       f"{cfg.heads} heads, seq {cfg.seq}, batch {cfg.batch}")
  print(f"\nplot saved to {os.path.abspath(args.plot)}")
  out.update(size=size, platform=platform, table=results, text=table)
  return out


if __name__ == "__main__":
  main()
