"""revax.experimental.layout: array layouts (jax.experimental.layout)."""
from revax._src.layout import Layout as Layout
from revax._src.layout import Format as Format
