"""Foreign function interface: call compiled C functions (XLA FFI handlers) from revax (jax.ffi)."""
from revax._src.lax.ffi_call import ffi_call as ffi_call
from revax._src.lax.ffi_call import pycapsule as pycapsule
from revax._src.lax.ffi_call import register_ffi_target as register_ffi_target
from revax._src.lax.ffi_call import build_ffi_lowering_function as build_ffi_lowering_function
from revax._src.lax.ffi_call import ffi_lowering as ffi_lowering
from revax._src.lax.ffi_call import include_dir as include_dir
from revax._src.lax.ffi_call import register_ffi_type as register_ffi_type
from revax._src.lax.ffi_call import register_ffi_type_id as register_ffi_type_id
