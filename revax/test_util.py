"""revax.test_util: derivative and batching checks, as jax.test_util."""
from revax._src.test_util import check_grads as check_grads
from revax._src.test_util import check_jvp as check_jvp
from revax._src.test_util import check_vjp as check_vjp
from revax._src.test_util import check_vmap as check_vmap
from revax._src.test_util import numerical_jvp as numerical_jvp
