"""revax.image: image resampling, as jax.image."""
from revax._src.image import ResizeMethod as ResizeMethod
from revax._src.image import resize as resize
from revax._src.image import scale_and_translate as scale_and_translate
