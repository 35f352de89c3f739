"""revax.stages: the types of jit's stages (as jax.stages)."""
from revax._src.stages import ArgInfo as ArgInfo
from revax._src.stages import Compiled as Compiled
from revax._src.stages import CompilerOptions as CompilerOptions
from revax._src.stages import Lowered as Lowered
from revax._src.stages import Traced as Traced
from revax._src.stages import Wrapped as Wrapped
