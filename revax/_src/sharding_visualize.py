"""Seeing how arrays are split: `revax.debug.inspect_array_sharding` (a value's sharding, handed
to a callback, also inside transformations) and `visualize_array_sharding` /
`visualize_sharding` (a table of which device holds which block, drawn with `rich`, as JAX's).
"""
from __future__ import annotations

import importlib.util

import numpy as np

from revax._src import tree_util
from revax._src.lax.inspect_sharding import inspect_sharding_p

__all__ = ["inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]


def inspect_array_sharding(value, *, callback) -> None:
  """Call `callback` with the sharding of each array in `value` (a pytree).

  Eagerly (and under grad or vmap outside jit) the callback gets each Array's sharding at once.
  Inside `jit` it is called when the program is lowered, with the NamedSharding of a value
  whose type is split over Explicit mesh axes, over the program's mesh with Auto axes (what
  JAX reports once XLA has partitioned the program); it is not called again for a cached
  program.

  Args:
    value: an array or a pytree of arrays.
    callback: called with one Sharding per array; its return value is ignored.

  Raises:
    NotImplementedError: inside jit, for a value whose type says nothing of its layout (JAX
      reports the layout XLA chose, which revax cannot read back).

  Example:
    >>> revax.debug.inspect_array_sharding(jnp.ones(3), callback=print)
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
  """
  for leaf in tree_util.tree_leaves(value):
    inspect_sharding_p.bind(leaf, callback=callback)


def visualize_array_sharding(arr, **kwargs) -> None:
  """Draw which device holds which block of `arr` (of rank 1 or 2); keyword arguments as for
  `visualize_sharding`. Works where `inspect_array_sharding` does.

  Raises:
    ValueError: `rich` is not installed, or `arr` is not of rank 1 or 2.
  """
  inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
  """Print a table of the blocks of an array of `shape` (rank 1 or 2) laid out by `sharding`:
  one cell per block, sized as the block, naming the devices that hold it ('CPU 0,1').

  Args:
    shape: the array's shape.
    sharding: a Sharding (NamedSharding, SingleDeviceSharding).
    use_color: color the cells (when the terminal has colors and matplotlib is installed, or a
      `color_map` is given).
    scale: scales the table's height.
    min_width, max_width: bounds of a cell's width, in characters (max_width also bounds the
      table).
    color_map: a function from [0, 1] to an RGBA tuple (matplotlib's tab20b by default).

  Raises:
    ValueError: `rich` is not installed, or `shape` is not of rank 1 or 2.

  Example:
    >>> revax.debug.visualize_sharding((4, 4), revax.sharding.SingleDeviceSharding(
    ...     revax.devices()[0]))  # doctest: +SKIP
  """
  if not importlib.util.find_spec("rich"):
    raise ValueError("`visualize_sharding` requires `rich` to be installed.")
  import rich.align
  import rich.box
  import rich.console
  import rich.padding
  import rich.style
  import rich.table

  if len(shape) > 2 or len(shape) < 1:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  console = rich.console.Console(width=max_width)
  use_color = use_color and console.color_system is not None
  if use_color and not color_map:
    try:
      import matplotlib as mpl
      color_map = mpl.colormaps["tab20b"]
    except ModuleNotFoundError:
      use_color = False
  cells = _cells(tuple(shape), sharding)
  kind = next(iter(sharding.device_set)).platform.upper()
  rows = max(i for i, _ in cells) + 1
  cols = max(j for _, j in cells) + 1
  colors = _color_cycle(color_map, rows, cols) if use_color else None
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0,
                           highlight=not use_color, pad_edge=False,
                           box=rich.box.SQUARE if not use_color else None)
  for i in range(rows):
    row = []
    for j in range(cols):
      devices, height, width = cells[i, j]
      text = f"{kind} " + ",".join(str(d) for d in sorted(devices))
      width = min(max(int(width * base_width * 2.5), min_width), max_width)
      height = 1 if height is None else int(height * base_height)
      left, extra = divmod(width - len(text) - 2, 2)
      top, extra_v = divmod(height - 2, 2)
      pad = [top, left + extra, top + extra_v, left]  # top, right, bottom, left
      color = text_color = None
      if colors is not None:
        color = _hex(next(colors)[:3])
        text_color = _text_color(color)
        pad = [p + 1 for p in pad]
      row.append(rich.padding.Padding(
          rich.align.Align(text, "center", vertical="middle"), tuple(max(p, 0) for p in pad),
          style=rich.style.Style(bgcolor=color, color=text_color)))
    table.add_row(*row)
  console.print(table, end="\n\n")


def _cells(shape, sharding) -> dict:
  """{(row, column) of a block: (device ids holding it, its height fraction (None for rank 1),
  its width fraction)}."""
  cells: dict = {}
  for device, index in sharding.devices_indices_map(shape).items():
    index = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)
    sizes = [(s.stop - s.start) if s.stop is not None else n for s, n in zip(index, shape)]
    chunk = tuple(0 if s.start is None and s.stop is None else s.start // size
                  for s, size in zip(index, sizes))
    if len(shape) == 2:
      key, height, width = chunk, sizes[0] / shape[0], sizes[1] / shape[1]
    else:
      key, height, width = (0, chunk[0]), None, sizes[0] / shape[0]
    ids, _, _ = cells.setdefault(key, (set(), height, width))
    ids.add(device.id)
  return cells


def _color_cycle(color_map, rows: int, cols: int):
  """The colors of the cells in row-major order, spread over the map as JAX's."""
  n = rows * cols
  values = np.linspace(0, 1, n)
  i = 0
  for _ in range(n):
    yield color_map(values[i])
    i = (i + n // 2 + bool(n % 2 == 0)) % n


def _hex(color) -> str:
  if isinstance(color, str):
    return color
  r, g, b = (int(c * 255) for c in color)
  return f"#{r:02X}{g:02X}{b:02X}"


def _text_color(color: str) -> str:
  r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
  return "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"
