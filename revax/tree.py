"""revax.tree: the short pytree names of jax.tree (map, leaves, structure, flatten, ...)."""
from revax._src.tree_util import static as static
from revax._src.pytrees import tree_all as all
from revax._src.pytrees import tree_broadcast as broadcast
from revax._src.pytrees import tree_flatten as flatten
from revax._src.pytrees import tree_flatten_with_path as flatten_with_path
from revax._src.pytrees import tree_leaves as leaves
from revax._src.pytrees import tree_leaves_with_path as leaves_with_path
from revax._src.pytrees import tree_map as map
from revax._src.pytrees import tree_map_with_path as map_with_path
from revax._src.pytrees import tree_reduce as reduce
from revax._src.pytrees import tree_reduce_associative as reduce_associative
from revax._src.pytrees import tree_structure as structure
from revax._src.pytrees import tree_transpose as transpose
from revax._src.tree_util import tree_unflatten as unflatten
