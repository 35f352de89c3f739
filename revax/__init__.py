"""revax: composable transformations of numerical programs (jit, grad, vmap, invertible AD),
compiled by XLA through the PJRT C API."""
from revax._src.core.config import config as config
from revax._src.runtime.array import Array as Array
from revax._src.ad_checkpoint import checkpoint as checkpoint
from revax._src.ad_checkpoint import checkpoint_policies as checkpoint_policies
from revax._src.ad_checkpoint import remat as remat
from revax._src.api import block_until_ready as block_until_ready
from revax._src.custom_derivatives import custom_jvp as custom_jvp
from revax._src.custom_derivatives import custom_vjp as custom_vjp
from revax._src.api import device_count as device_count
from revax._src.api import device_get as device_get
from revax._src.api import device_put as device_put
from revax._src.api import devices as devices
from revax._src.api import eval_shape as eval_shape
from revax._src.api import make_jaxpr as make_jaxpr
from revax._src.api import ShapeDtypeStruct as ShapeDtypeStruct
from revax._src.autodiff import grad as grad
from revax._src.autodiff import hessian as hessian
from revax._src.autodiff import jacfwd as jacfwd
from revax._src.autodiff import jacrev as jacrev
from revax._src.autodiff import jvp as jvp
from revax._src.autodiff import linear_transpose as linear_transpose
from revax._src.autodiff import linearize as linearize
from revax._src.autodiff import value_and_grad as value_and_grad
from revax._src.autodiff import vjp as vjp
from revax._src.invertible import custom_ivjp as custom_ivjp
from revax._src.invertible import invertible as invertible
from revax._src.jit import jit as jit
from revax._src.vmap import vmap as vmap

from revax import ad_checkpoint as ad_checkpoint
from revax import dtypes as dtypes
from revax import lax as lax
from revax import nn as nn
from revax import numpy as numpy
from revax import random as random
from revax import tree_util as tree_util
# issue 16 surface: tree, typing, top-level names
from revax import tree as tree
from revax import typing as typing
from revax._src.api_extras import clear_caches as clear_caches
from revax._src.api_extras import custom_gradient as custom_gradient
from revax._src.api_extras import default_backend as default_backend
from revax._src.api_extras import ensure_compile_time_eval as ensure_compile_time_eval
from revax._src.api_extras import jacobian as jacobian
from revax._src.api_extras import live_arrays as live_arrays
from revax._src.api_extras import named_call as named_call
from revax._src.api_extras import named_scope as named_scope
from revax._src.api_extras import print_environment_info as print_environment_info
from revax._src.api_extras import typeof as typeof
from revax._src.core.dtypes import float0 as float0
from revax._src.runtime.client import Device as Device

__version__ = "0.1.0"
