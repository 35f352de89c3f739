"""revax.extend.source_info_util: source information and name stacks (jax.extend)."""
from revax._src.extend.source_info import NameStack as NameStack
from revax._src.extend.source_info import SourceInfo as SourceInfo
from revax._src.extend.source_info import current as current
from revax._src.extend.source_info import current_name_stack as current_name_stack
from revax._src.extend.source_info import extend_name_stack as extend_name_stack
from revax._src.extend.source_info import new_name_stack as new_name_stack
from revax._src.extend.source_info import new_source_info as new_source_info
from revax._src.extend.source_info import register_exclusion as register_exclusion
from revax._src.extend.source_info import reset_name_stack as reset_name_stack
from revax._src.extend.source_info import set_name_stack as set_name_stack
from revax._src.extend.source_info import summarize as summarize
from revax._src.extend.source_info import transform_name_stack as transform_name_stack
from revax._src.extend.source_info import user_context as user_context
