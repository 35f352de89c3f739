"""Coverage of jax 0.10.2's public names outside jax.numpy: jax (top level), jax.tree,
jax.tree_util, jax.random, jax.nn, jax.nn.initializers, jax.lax, jax.example_libraries.stax and
.optimizers, jax.dtypes, jax.typing, jax.flatten_util, jax.custom_derivatives,
jax.experimental.ode, jax.extend.* and jax.interpreters.*. Each revax module must have every public name of the jax
module it mirrors, except the ones listed below with the reason (printed with `-s`). The lists
name the issue or the work that owns each missing name. A row whose revax module is None is a
jax module revax does not have (every name of it is excluded with its reason)."""
import importlib

import pytest

from tests.coverage.names import missing_names, public_names

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

# --- jax.extend and jax.interpreters (issue 35) -------------------------------------------------
_CALL_P = ("JAX's un-compiled call primitives (core.call / closed_call: a function traced to a "
           "sub-jaxpr and inlined at lowering); revax stages a called function through its jit "
           "primitive (jit_p, a ClosedJaxpr param) and has no separate call primitive")
EXT_CORE = {
    "CallPrimitive": _CALL_P, "call_impl": _CALL_P,
    "TraceTag": ("the identity JAX gives a JVPTrace/BatchTrace to tell its tracers from those of "
                 "other traces; a revax trace is its own identity (`trace.main` is the trace, "
                 "and a tracer holds its trace), so there is no tag object to make"),
}
EXT_PRIMITIVES = {
    "call_p": _CALL_P, "closed_call_p": _CALL_P,
    "empty2_p": ("JAX-internal primitive for scan's uninitialized carry buffers (a TODO in jax "
                 "says it is to be deleted); revax's scan allocates its buffers without one"),
}
EXT_BACKEND = {
    "clear_backends": ("revax's PJRT client lives as long as the process: live Arrays and "
                       "cached executables hold its buffers and handles, and there is no "
                       "teardown that would make a fresh client; revax.clear_caches drops the "
                       "compiled programs"),
    "get_compile_options": ("returns jaxlib's xla_client.CompileOptions, a C++ object; revax "
                            "encodes the few CompileOptionsProto fields it sets itself "
                            "(runtime/pjrt.py), and jit(compiler_options=) passes XLA options"),
    "register_backend_factory": ("registers a factory returning jaxlib's xla_client.Client (a C++ "
                                 "client); revax's backends are PJRT C-API plugins, chosen by "
                                 "platform or by plugin path (config revax_pjrt_plugin, env "
                                 "PJRT_PLUGIN)"),
}
_HLO_SHARDING = ("converts between serialized OpSharding protos and jaxlib's C++ "
                 "xla_client.HloSharding/OpSharding objects, which revax does not have (its "
                 "shardings are written into StableHLO text as mhlo.sharding/sdy attributes)")
EXT_SHARDING = {n: _HLO_SHARDING for n in (
    "get_hlo_sharding_from_serialized_proto", "get_op_sharding_from_serialized_proto",
    "get_serialized_proto_from_hlo_sharding")}
_NO_MLIR = ("jaxlib's MLIR C++ entry points over StableHLO bytecode / HLO modules (portable "
            "artifacts, shape refinement, HLO-to-StableHLO); revax writes StableHLO as text and "
            "has no MLIR bindings")
EXT_MLIR = {**{n: _NO_MLIR for n in ("deserialize_portable_artifact", "serialize_portable_artifact",
                                     "refine_polymorphic_shapes", "hlo_to_stablehlo")},
            "lower_with_sharding_in_types": ("wraps an MLIR Python-binding ir.Value in a sharding "
                                             "constraint op; revax's lowering rules write text")}
_MLIR_BINDINGS = ("an MLIR Python-binding object (ir.Context/DialectRegistry/Value/Type/"
                  "Attribute) or a helper that makes or reads them; revax writes StableHLO as "
                  "text through LoweringRuleContext and has no MLIR bindings (a library "
                  "primitive lowers with mlir.lower_fun)")
EXT_LOWERING = {n: _MLIR_BINDINGS for n in ("JaxIrContext", "upstream_dialects")}
_HLO_PASSES = ("a hook into XLA's C++ compilation pipeline (a pass over serialized "
               "HloModuleProtos at a pipeline stage); revax compiles through the PJRT C API, "
               "which has no such hook")
EXT_XLA = {n: _HLO_PASSES for n in ("PipelineStage", "clear_hlo_module_transformation",
                                    "register_hlo_module_transformation")}
EXT_LINEAR_UTIL = {"Callable": _IMPORT}
_FLAT_TREE = ("jax 0.10.2's internal forms over its FlatTree type (primals.map2, ...) with a "
              "JVPTrace/LinearizeTrace tag; revax has no FlatTree: revax.jvp and revax.linearize "
              "are the transformations")
INTERP_AD = {"annotations": _IMPORT, "jvp": _FLAT_TREE, "linearize": _FLAT_TREE}
_VMAPPABLE = ("JAX's protocol for vmapping custom container types by a spec type (to_elt/"
              "from_elt handlers); revax's vmap maps pytrees of arrays only")
INTERP_BATCHING = {"register_vmappable": _VMAPPABLE, "unregister_vmappable": _VMAPPABLE}
INTERP_PE = {
    "Val": "a type alias (typing.Any) for annotations, not an API",
    "JaxprTracer": ("the tracer of JAX's JaxprTrace (partial evaluation over PartialVals with "
                    "recipes); revax partially evaluates by staging (PartialEvalTrace over its "
                    "DynamicJaxprTrace), whose tracers are DynamicJaxprTracer"),
    "custom_partial_eval_rules": ("rules over JAX's JaxprTrace and JaxprTracers (known/unknown "
                                  "PartialVals); revax's partial-eval rules split a primitive "
                                  "under its staging PartialEvalTrace, another calling form"),
    "partial_eval_jaxpr_custom_rules": ("rules of JAX's partial_eval_jaxpr_custom (the "
                                        "known/staged split of remat with saveability "
                                        "policies), which revax's checkpoint does not use"),
}
_MLIR_PIPELINE = ("part of JAX's lowering pipeline over MLIR Python-binding modules (its module "
                  "context, lowering parameters and results, axis contexts, token sets, "
                  "jaxpr-to-func lowering); revax's pipeline writes StableHLO text "
                  "(revax._src.interpreters.mlir) and takes a library's rules through "
                  "register_lowering / lower_fun")
INTERP_MLIR = {
    **{n: _MLIR_BINDINGS for n in (
        "Token", "Value", "dense_int_array", "token_type", "aval_to_ir_type", "aval_to_ir_types",
        "dtype_to_ir_type", "dense_int_elements", "i32_attr", "i64_attr", "ir_attribute",
        "ir_constant", "ir_constants", "flatten_ir_types", "flatten_ir_values",
        "unflatten_ir_values_like_types", "shape_tensor", "ir_type_handlers", "ir_tree_registry",
        "make_ir_context", "module_to_bytecode", "module_to_string", "merge_mlir_modules",
        "ConstantHandler", "register_constant_handler")},
    **{n: _MLIR_PIPELINE for n in (
        "ModuleContext", "LoweringParameters", "LoweringResult", "ShapePolyLoweringState",
        "TokenSet", "jaxpr_subcomp", "lower_jaxpr_to_fun", "lower_jaxpr_to_module",
        "core_call_lowering", "SPMDAxisContext", "ShardingContext")},
    "LoweringRule": "a typing alias (Callable[...]) for annotations, not an API",
    "AxisContext": "a typing alias (Union of the axis contexts) for annotations, not an API",
    "MeshAxisName": "a type alias (typing.Any) for annotations, not an API",
    "lowerable_effects": ("JAX's set of effect types a lowering may carry (libraries add theirs); "
                          "revax does not gate lowering on effect types: every effect lowers"),
}
INTERP_PXLA = {"create_compile_options": (
    "builds jaxlib's C++ xla_client.CompileOptions for a pmap/pjit computation; revax encodes "
    "its CompileOptionsProto itself in the runtime")}
INTERP_XLA = {"canonicalize_dtype_handlers": (
    "JAX's table of per-Python-type value canonicalizers behind dtypes.canonicalize_value; "
    "revax canonicalizes values where it reads their avals (core/avals.py), with no per-type "
    "table")}

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
    ("jax.extend", "revax.extend", {}),
    ("jax.extend.core", "revax.extend.core", EXT_CORE),
    ("jax.extend.core.primitives", "revax.extend.core.primitives", EXT_PRIMITIVES),
    ("jax.extend.backend", "revax.extend.backend", EXT_BACKEND),
    ("jax.extend.random", "revax.extend.random", {}),
    ("jax.extend.sharding", "revax.extend.sharding", EXT_SHARDING),
    ("jax.extend.lowering", "revax.extend.lowering", EXT_LOWERING),
    ("jax.extend.linear_util", "revax.extend.linear_util", EXT_LINEAR_UTIL),
    ("jax.extend.source_info_util", "revax.extend.source_info_util", {}),
    ("jax.extend.mlir", None, EXT_MLIR),
    ("jax.extend.xla", None, EXT_XLA),
    # (its one attribute, `ifrt_programs`, is jaxlib's C++ module of IFRT program types)
    ("jax.extend.ifrt_programs", None, {}),
    ("jax.interpreters.ad", "revax.interpreters.ad", INTERP_AD),
    ("jax.interpreters.batching", "revax.interpreters.batching", INTERP_BATCHING),
    ("jax.interpreters.partial_eval", "revax.interpreters.partial_eval", INTERP_PE),
    ("jax.interpreters.mlir", "revax.interpreters.mlir", INTERP_MLIR),
    ("jax.interpreters.pxla", None, INTERP_PXLA),
    ("jax.interpreters.xla", "revax.interpreters.xla", INTERP_XLA),
]


def _absent(jax_name):
  """The revax module a None row stands for must not exist (else the row must name it)."""
  import importlib.util
  name = "revax" + jax_name[len("jax"):]
  assert importlib.util.find_spec(name) is None, f"{name} exists now: name it in MODULES"


@pytest.mark.parametrize("jax_name,revax_name,exclusions", MODULES, ids=[m[0] for m in MODULES])
def test_every_public_name_is_present_or_excluded_with_a_reason(jax_name, revax_name,
                                                                 exclusions):
  assert all(isinstance(r, str) and r for r in exclusions.values())
  if revax_name is None:
    _absent(jax_name)
    jax_names = public_names(importlib.import_module(jax_name))
    assert sorted(set(exclusions) - jax_names) == [], "exclusions that jax does not have"
    missing = sorted(jax_names - set(exclusions))
    assert not missing, f"revax has no {jax_name}, and these names are not excluded: {missing}"
    return
  missing = missing_names(jax_name, revax_name, exclusions)
  assert not missing, f"{revax_name} lacks these names of {jax_name}: {missing}"


@pytest.mark.parametrize("jax_name,revax_name,exclusions", MODULES, ids=[m[0] for m in MODULES])
def test_exclusions_are_still_missing(jax_name, revax_name, exclusions):
  """An excluded name that revax now has must leave the list (keeps the list honest)."""
  if revax_name is None:
    return _absent(jax_name)
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
