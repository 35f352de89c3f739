"""revax.extend.linear_util: wrapped functions and their transformations (jax.extend)."""
from revax._src.extend.linear_util import Store as Store
from revax._src.extend.linear_util import StoreException as StoreException
from revax._src.extend.linear_util import WrappedFun as WrappedFun
from revax._src.extend.linear_util import wrap_init as wrap_init
from revax._src.extend.linear_util import transformation as transformation
from revax._src.extend.linear_util import transformation_with_aux as transformation_with_aux
from revax._src.extend.linear_util import transformation2 as transformation2
from revax._src.extend.linear_util import transformation_with_aux2 as transformation_with_aux2
from revax._src.extend.linear_util import cache as cache
from revax._src.extend.linear_util import merge_linear_aux as merge_linear_aux
