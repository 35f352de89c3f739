"""revax's jax-compatibility mode (revax.compat, `python -m revax.run_as_jax`): off by default,
maps jax's public modules onto revax's module objects, refuses what revax lacks with an error
naming it, and provides the private names major libraries import as small shims (one test per
shim, naming the library and the use).

Each test runs in a fresh interpreter: the mode changes what `import jax` means process-wide,
and this test process has the real jax imported (as the oracle of other tests).
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from tests.child_env import child_env



def run(code: str, *args, module=False):
  """Run `code` under `python -m revax.run_as_jax`; returns stdout (asserts success)."""
  env = child_env()
  if module:
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
  else:
    tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"revax_compat_{os.getpid()}.py"
    tmp.write_text(textwrap.dedent(code))
    cmd = [sys.executable, "-W", "ignore", "-m", "revax.run_as_jax", str(tmp), *args]
  out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


def test_off_by_default():
  out = run("""
      import sys, revax, revax.numpy
      import revax.compat
      print(revax.compat.is_installed(), any(n == 'jax' or n.startswith('jax.')
                                               for n in sys.modules if 'revax' in
                                               repr(sys.modules[n])))
  """, module=True)
  assert out.split() == ["False", "False"]


def test_modules_are_revax_modules_and_version_is_jax_api_level():
  out = run("""
      import sys
      import jax, jax.numpy as jnp, jax.lax, jax.extend.core, jax.interpreters.ad
      import revax
      print(jax.numpy is revax.numpy, jax.lax is revax.lax, jax.Array is revax.Array)
      print(jax.extend.core.Primitive.__module__, jax.__version__, jax.__version_info__)
      print(jax.version.__version_info__, float(jax.grad(jnp.sin)(0.0)))
      print(sys.argv[1:])
  """, "a", "--b")
  lines = out.splitlines()
  assert lines[0] == "True True True"
  assert lines[1] == "revax._src.extend.core 0.10.2 (0, 10, 2)"
  assert lines[2] == "(0, 10, 2) 1.0"
  assert lines[3] == "['a', '--b']"


def test_run_as_jax_runs_a_module():
  env = child_env()
  out = subprocess.run([sys.executable, "-m", "revax.run_as_jax", "-m", "json.tool", "--help"],
                       capture_output=True, text=True, env=env, timeout=120)
  assert out.returncode == 0 and "usage" in out.stdout.lower()
  bad = subprocess.run([sys.executable, "-m", "revax.run_as_jax"], capture_output=True,
                       text=True, env=env, timeout=120)
  assert bad.returncode == 2 and "usage: python -m revax.run_as_jax" in bad.stderr


def test_refusals_name_what_is_missing():
  out = run("""
      import jax
      for name in ("jax.experimental.jax2tf", "jax._src.pallas_nowhere", "jax._src.earray"):
        try:
          __import__(name)
        except ImportError as e:
          print(type(e).__name__, name in str(e))
      try:
        jax.not_a_jax_name
      except AttributeError as e:
        print("AttributeError", "jax.not_a_jax_name" in str(e))
  """)
  assert out.split() == ["ModuleNotFoundError", "True"] * 3 + ["AttributeError", "True"]


def test_install_refuses_after_the_real_jax():
  out = run("""
      import jax  # the real one
      import revax.compat
      try:
        revax.compat.install()
      except RuntimeError as e:
        print("refused", "already imported" in str(e))
  """, module=True)
  assert out.split() == ["refused", "True"]


def test_install_and_uninstall():
  out = run("""
      import sys, revax, revax.compat
      revax.compat.install(); revax.compat.install()  # idempotent
      import jax.numpy
      print(jax.numpy is revax.numpy, revax.compat.is_installed())
      revax.compat.uninstall()
      print(revax.compat.is_installed(), 'jax' in sys.modules, 'jax.numpy' in sys.modules)
  """, module=True)
  assert out.split() == ["True", "True", "False", "False", "False"]


# --- the shims of JAX's private names, one per library use -------------------------------------
def test_shim_traceback_util_equinox_flax_register_and_api_boundary():
  """equinox/_jit.py, flax/linen/module.py: `traceback_util.register_exclusion(__file__)`,
  `@traceback_util.api_boundary`; flax/traceback_util.py edits `_exclude_paths`."""
  out = run("""
      import jax._src.traceback_util as tu
      tu.register_exclusion('/lib/x.py'); tu._exclude_paths.append('/lib/y.py')
      f = tu.api_boundary(lambda x: x + 1)
      print(f(1), '/lib/x.py' in tu._exclude_paths, '/lib/y.py' in tu._exclude_paths)
  """)
  assert out.split() == ["2", "True", "True"]


def test_shim_compiler_chex_restrict_backends():
  """chex/_src/restrict_backends.py wraps `compiler.backend_compile_and_load` to refuse compiles
  for a platform; the wrapper must see revax's compiles."""
  out = run("""
      import jax, jax.numpy as jnp
      from jax._src import compiler
      inner = compiler.backend_compile_and_load
      seen = []
      def wrapper(backend, *a, **k):
        seen.append(backend.platform)
        if backend.platform == 'cpu':
          raise RuntimeError('forbidden')
        return inner(backend, *a, **k)
      compiler.backend_compile_and_load = wrapper
      try:
        jax.jit(lambda x: x * 3 + 1)(jnp.ones(2))
      except RuntimeError as e:
        print('refused', e)
      compiler.backend_compile_and_load = inner
      print(jax.jit(lambda x: x * 3 + 1)(jnp.ones(2)).tolist(), seen)
  """)
  assert out.splitlines() == ["refused forbidden", "[4.0, 4.0] ['cpu']"]


def test_shim_xla_bridge_backends_chex_fake():
  """chex/_src/fake.py: `jax._src.xla_bridge._backends` is empty before the first computation
  and holds 'cpu' after it (to refuse changing the CPU device count too late); revax starts
  its backend at the first compile or transfer."""
  out = run("""
      import jax, jax.numpy as jnp
      before = sorted(jax._src.xla_bridge._backends)  # read without importing it, as chex does
      jax.jit(lambda x: x + 1)(jnp.ones(2)).block_until_ready()  # starts the CPU backend
      print(before, sorted(jax._src.xla_bridge._backends))
  """)
  assert out.strip() == "[] ['cpu']"


def test_shim_dtypes_equinox_type_promotion_error_and_flax_extended_dtype():
  """equinox/nn/_embedding.py imports TypePromotionError; flax/linen/fp8_ops.py subclasses
  `dtypes.extended` and `dtypes.ExtendedDType` and calls `supports_inf`."""
  out = run("""
      import dataclasses
      import jax.numpy as jnp
      from jax._src import dtypes
      class meta(dtypes.extended): pass
      @dataclasses.dataclass(frozen=True)
      class wrapper(dtypes.ExtendedDType):
        float_dtype: dtypes.DType
        type: type = meta
      print(issubclass(dtypes.TypePromotionError, ValueError), wrapper(jnp.float32).type is meta,
            dtypes.supports_inf(jnp.float32), dtypes.supports_inf(jnp.float8_e4m3fn),
            dtypes.supports_inf(jnp.int32))
  """)
  assert out.split() == ["True", "True", "True", "False", "False"]


def test_shim_dispatch_equinox_wait_for_tokens():
  """equinox/_jit.py registers `jax._src.dispatch.wait_for_tokens` with atexit."""
  out = run("""
      import jax._src.dispatch
      jax._src.dispatch.wait_for_tokens(); print('ok')
  """)
  assert out.strip() == "ok"


def test_shim_tree_util_registry_flax_nnx():
  """flax/nnx/graphlib.py: `type(x) in jax._src.tree_util._registry` (is it a pytree node?)."""
  out = run("""
      import jax
      from jax._src.tree_util import _registry
      class C: pass
      class D: pass
      jax.tree_util.register_pytree_node(D, lambda d: ((), None), lambda a, c: D())
      print(tuple in _registry, dict in _registry, C in _registry, D in _registry,
            int in _registry)
  """)
  assert out.split() == ["True", "True", "False", "True", "False"]


def test_shim_core_flax_shaped_array():
  """flax/linen/fp8_ops.py: `from jax._src import core; core.ShapedArray((), dtype)`."""
  out = run("""
      import jax, jax.numpy as jnp
      from jax._src import core
      print(core.ShapedArray((), jnp.float32) == jax.core.ShapedArray((), jnp.float32),
            core.Primitive is jax.extend.core.Primitive)
  """)
  assert out.split() == ["True", "True"]


def test_shim_state_types_flax_abstract_ref():
  """flax/nnx/variablelib.py: `isinstance(jax.typeof(x), AbstractRef)` is False for arrays and
  True for a `jax.new_ref` (revax's own refs; nnx.var_defaults(ref=True) makes them)."""
  out = run("""
      import jax, jax.numpy as jnp
      from jax._src.state.types import AbstractRef
      x = jnp.ones(2)
      print(isinstance(jax.typeof(x), AbstractRef), isinstance(x, jax.Ref))
      r = jax.new_ref(x)
      r[0] = 3.0
      print(isinstance(jax.typeof(r), AbstractRef), isinstance(r, jax.Ref), r[0])
  """)
  assert out.split() == ["False", "False", "True", "True", "3.0"]


def test_shim_hijax_flax_nnx_definitions():
  """flax/nnx/variablelib.py defines hijax Variable types at import (HiPrimitive subclasses,
  register_hitype, control_flow_allowed_effects); binding one is refused by name."""
  out = run("""
      from jax.experimental import hijax as hjx
      class P(hjx.HiPrimitive): pass
      class T(hjx.MutableHiType): m = hjx.aval_method(lambda self: 1)
      hjx.register_hitype(T, lambda x: x); hjx.control_flow_allowed_effects.add_type(T)
      try:
        P('p').bind(1.0)
      except NotImplementedError as e:
        print('refused', 'hijax' in str(e))
  """)
  assert out.split() == ["refused", "True"]


def test_shim_checkify_and_api_util_flax():
  """flax/nnx/transforms/transforms.py: `from jax._src import checkify` (checkify, Error,
  user_checks); flax/core/partial_eval.py: `jax.api_util.flatten_fun` + `lu.wrap_init` +
  `pe.trace_to_jaxpr_nounits` (known values computed at once)."""
  out = run("""
      import jax, jax.numpy as jnp
      from jax._src import checkify
      from jax.extend import linear_util as lu
      from jax.interpreters import partial_eval as pe
      err, out = checkify.checkify(lambda x: x + 1, errors=checkify.user_checks)(1.0)
      print(err.get(), float(out))
      leaves, tree = jax.tree_util.tree_flatten(((2.0, jax.ShapeDtypeStruct((3,), jnp.float32)),
                                                 {}))
      f, out_tree = jax.api_util.flatten_fun(
          lu.wrap_init(lambda a, b: (a * 3, b + a)), tree)
      pvals = [pe.PartialVal.known(2.0),
               pe.PartialVal.unknown(jax.core.ShapedArray((3,), jnp.float32))]
      jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(f, pvals)
      print([pv.is_known() for pv in out_pvals], float(out_pvals[0][1]), out_tree().num_leaves)
  """)
  assert out.splitlines() == ["None 2.0", "[True, False] 6.0 2"]
