"""Coverage of jax 0.10.2's public names outside jax.numpy: jax (top level), jax.tree,
jax.tree_util, jax.random, jax.nn, jax.nn.initializers, jax.lax, jax.example_libraries.stax and
.optimizers, jax.dtypes, jax.typing, jax.flatten_util, jax.custom_derivatives and
jax.experimental.ode. Each revax module must have every public name of the jax
module it mirrors, except the ones listed below with the reason (printed with `-s`). The lists
name the issue or the work that owns each missing name."""
import pytest

from tests.coverage.names import missing_names

JAX_TOP = {}

RANDOM = {}

NN = {}

NN_INIT = {}

LAX = {}

_IMPORT = "an import inside jax's module file (typing/functools/builtins/jax internals), not its API"
OPTIMIZERS = {n: _IMPORT for n in ("Any", "Callable", "NamedTuple", "annotations", "map",
                                   "namedtuple", "partial", "safe_map", "safe_zip", "unzip2",
                                   "zip")}

_ODE_IMPORTS = {n: _IMPORT for n in (
    "Callable", "map", "partial", "promote_dtypes_inexact", "safe_map", "safe_zip", "tree_leaves",
    "tree_map", "zip", "ravel_pytree")}
ODE = {**_ODE_IMPORTS,
       "ravel_first_arg_": ("the linear_util transformation behind ravel_first_arg (JAX's "
                            "tracing machinery); ravel_first_arg itself is present")}

_MULTIHOST_P = ("JAX implements the host-local/global conversions as primitives whose lowering "
                "is the identity; revax's are plain functions, the identity under a "
                "transformation (one process: local and global types agree), so these "
                "primitive objects and their rules have no counterpart")
MULTIHOST = {
    **{n: _IMPORT for n in ("Any", "P", "annotations", "lru_cache", "partial", "safe_zip",
                            "tree_flatten", "tree_unflatten")},
    **{n: _MULTIHOST_P for n in (
        "global_array_to_host_local_array_p", "global_array_to_host_local_array_impl",
        "gtl_abstract_eval", "host_local_array_to_global_array_p",
        "host_local_array_to_global_array_impl", "ltg_abstract_eval", "ltg_batcher")},
}

MODULES = [
    ("jax", "revax", JAX_TOP),
    ("jax.tree", "revax.tree", {}),
    ("jax.tree_util", "revax.tree_util", {}),
    ("jax.random", "revax.random", RANDOM),
    ("jax.nn", "revax.nn", NN),
    ("jax.nn.initializers", "revax.nn.initializers", NN_INIT),
    ("jax.lax", "revax.lax", LAX),
    ("jax.example_libraries.stax", "revax.example_libraries.stax", {}),
    ("jax.example_libraries.optimizers", "revax.example_libraries.optimizers", OPTIMIZERS),
    ("jax.sharding", "revax.sharding", {}),
    ("jax.dtypes", "revax.dtypes", {}),
    ("jax.typing", "revax.typing", {}),
    ("jax.experimental.ode", "revax.experimental.ode", ODE),
    ("jax.experimental.mesh_utils", "revax.experimental.mesh_utils", {}),
    ("jax.experimental.multihost_utils", "revax.experimental.multihost_utils", MULTIHOST),
    # pjit and shard_map are deprecated attributes there (module __getattr__), absent from dir()
    ("jax.experimental.pjit", "revax.experimental.pjit", {}),
    ("jax.experimental.shard_map", "revax.experimental.shard_map", {}),
    ("jax.experimental.checkify", "revax.experimental.checkify", {}),
    ("jax.experimental.compilation_cache.compilation_cache",
     "revax.experimental.compilation_cache.compilation_cache", {}),
    ("jax.flatten_util", "revax.flatten_util", {}),
    ("jax.custom_batching", "revax.custom_batching", {}),
    ("jax.custom_derivatives", "revax.custom_derivatives", {
        "remat_opt_p": ("JAX-internal primitive of its remat-of-custom_vjp optimization; revax's "
                        "checkpoint of a custom_vjp needs no such primitive")}),
    ("jax.profiler", "revax.profiler", {
        n: ("reader of XLA's XSpace protobuf (*.xplane.pb) from the TSL profiler, which revax "
            "does not have; its trace is Chrome trace-event JSON") for n in (
            "ProfileData", "ProfileEvent", "ProfilePlane")}),
    ("jax.dlpack", "revax.dlpack", {}),
    ("jax.stages", "revax.stages", {}),
    ("jax.distributed", "revax.distributed", {}),
    ("jax.core", "revax.core", {}),
    ("jax.monitoring", "revax.monitoring", {}),
]


@pytest.mark.parametrize("jax_name,revax_name,exclusions", MODULES, ids=[m[0] for m in MODULES])
def test_every_public_name_is_present_or_excluded_with_a_reason(jax_name, revax_name,
                                                                 exclusions):
  assert all(isinstance(r, str) and r for r in exclusions.values())
  missing = missing_names(jax_name, revax_name, exclusions)
  assert not missing, f"{revax_name} lacks these names of {jax_name}: {missing}"


@pytest.mark.parametrize("jax_name,revax_name,exclusions", MODULES, ids=[m[0] for m in MODULES])
def test_exclusions_are_still_missing(jax_name, revax_name, exclusions):
  """An excluded name that revax now has must leave the list (keeps the list honest)."""
  import importlib
  revax_mod = importlib.import_module(revax_name)
  present = sorted(n for n in exclusions if hasattr(revax_mod, n))
  assert not present, f"{revax_name} has these excluded names now: {present}"


def test_jax_ad_names_are_present():
  """jax.ad (a namespace attribute of jax, not an importable module): every name it holds is in
  revax.ad."""
  import jax

  import revax
  names = {n for n in vars(jax.ad) if not n.startswith("_")}
  assert names and not sorted(names - set(dir(revax.ad)))
