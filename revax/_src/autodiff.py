"""The autodiff API: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, hessian,
linear_transpose. All work over pytrees, with JAX's semantics and error messages.

Forward mode pushes tangents through a JVPTrace. Reverse mode linearizes (JVP under partial
evaluation: the primal runs now, the tangent computation is staged) and transposes the linear
jaxpr. Symbolic `Zero`s are instantiated only at the API boundary, where the user sees arrays.
"""
from __future__ import annotations


import numpy as np

from revax._src.core import wrapping
from revax._src import tree_util
from revax._src.core import dtypes
from revax._src.core.avals import AbstractRef, get_aval
from revax._src.interpreters import ad
from revax._src.lax import conversion, creation
from revax._src.runtime.array import Array
from revax._src.shape_dtype_struct import abstractify as _abstractify


def _check_callable(fun, name):
  if not callable(fun):
    raise TypeError(f"{name} expects a callable, got {fun!r} of type {type(fun).__name__}")


def _flat_fun(fun, in_tree, store, has_aux=False):
  """fun of pytrees -> function of flat leaves returning flat outputs (tree kept in `store`).

  With `has_aux`, `fun` returns `(output, aux)` and the flat function returns `(output leaves,
  aux leaves)`; the transformation hands the aux leaves back as plain values (never its own
  tracers) and `_aux_tree` rebuilds them.
  """
  def flat(*leaves):
    args = tree_util.tree_unflatten(in_tree, leaves)
    out = fun(*args)
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("a function with has_aux=True must return a pair (output, aux), got "
                        f"{type(out).__name__}")
      out, aux = out
      aux_leaves, store["aux_tree"] = tree_util.tree_flatten(aux)
    leaves_out, store["out_tree"] = tree_util.tree_flatten(out)
    for x in leaves_out:
      get_aval(x)
    return (leaves_out, aux_leaves) if has_aux else leaves_out
  return flat


def _aux_tree(store, aux_leaves):
  return tree_util.tree_unflatten(store["aux_tree"], aux_leaves)


def _zeros_for(aval):
  return ad.zeros_like_aval(aval)


def _materialize(t):
  return _zeros_for(t.aval) if type(t) is ad.Zero else t


# --- forward mode ----------------------------------------------------------------------------------
def jvp(fun, primals, tangents, has_aux=False):
  """Forward-mode derivative: `(fun(*primals), J @ tangents)`.

  Args:
    fun: function of arrays (pytrees).
    primals, tangents: tuples (or lists) of arguments and tangents of the same structure; each
      tangent has its primal's shape and dtype (float0 for integer primals).

  Example:
    >>> revax.jvp(revax.numpy.sin, (0.5,), (1.0,))
    (Array(0.47942555, dtype=float32, weak_type=True), Array(0.87758255, dtype=float32, weak_type=True))
  """
  _check_callable(fun, "jvp")
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
  t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jvp must have the same tree structure; "
                    f"primals have tree structure {p_tree} whereas tangents have tree structure "
                    f"{t_tree}.")
  tangents_in = []
  for p, t in zip(p_leaves, t_leaves, strict=True):
    pa, ta = get_aval(p), get_aval(t)
    expected = ad.tangent_aval(pa)
    if ta.shape != pa.shape:
      raise ValueError(f"jvp called with different primal and tangent shapes; got primal shape "
                       f"{pa.shape} and tangent shape as {ta.shape}")
    if ta.dtype != expected.dtype:
      raise TypeError(f"primal and tangent arguments to jvp do not match; dtypes must be equal, "
                      f"or in case of int/bool primal dtype the tangent dtype must be float0. "
                      f"Got primal dtype {pa.dtype.name} and so expected tangent dtype "
                      f"{expected.dtype.name}, but got tangent dtype {ta.dtype.name} instead.")
    tangents_in.append(ad.Zero(expected) if ta.dtype == dtypes.float0 else t)
  store = {}
  res = ad.jvp_flat(_flat_fun(fun, p_tree, store, has_aux), p_leaves, tangents_in,
                    has_aux=has_aux)
  outs, out_tangents = res[0], res[1]
  out_tree = store["out_tree"]
  primal_out = tree_util.tree_unflatten(out_tree, outs)
  tangent_out = tree_util.tree_unflatten(out_tree, [_materialize(t) for t in out_tangents])
  if has_aux:
    return primal_out, tangent_out, _aux_tree(store, res[2])
  return primal_out, tangent_out


def _run_with_refusing_vjp(fun, primals, p_tree, ref, has_aux):
  """`fun(*primals)` with a VJP that raises jax's error for the cotangent of `ref` (what
  linearize and vjp of a function of a Ref return, as jax 0.10.2's)."""
  out = fun(*primals)

  def refuse(cotangent):
    raise ad.ref_cotangent_error(ref)
  f_vjp = VJP(refuse, len(primals), tree_util.tree_structure(out), p_tree)
  return (out[0], f_vjp, out[1]) if has_aux else (out, f_vjp)


def linearize(fun, *primals, has_aux=False):
  """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` applies the linearization.

  The primal is computed once; `f_jvp` evaluates only the staged linear map.
  """
  _check_callable(fun, "linearize")
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  refs = [a for a in map(get_aval, p_leaves) if isinstance(a, AbstractRef)]
  if refs:  # (as jax 0.10.2: the function runs, its VJP refuses to give a ref a cotangent)
    return _run_with_refusing_vjp(fun, primals, p_tree, refs[0], has_aux)
  store = {}
  res = ad.linearize_flat(_flat_fun(fun, p_tree, store, has_aux), p_leaves, has_aux=has_aux)
  outs, lin = res[0], res[1]
  out_tree = store["out_tree"]
  in_avals = [get_aval(p) for p in p_leaves]

  def f_jvp(*tangents):
    t_leaves, t_tree = tree_util.tree_flatten(tangents)
    if t_tree != p_tree:
      raise TypeError(f"linearized function called with tangents of structure {t_tree}, "
                      f"expected {p_tree}")
    t_leaves = [_check_linearized_tangent(t, a) for t, a in zip(t_leaves, in_avals, strict=True)]
    return tree_util.tree_unflatten(out_tree, [_materialize(t) for t in
                                               ad.eval_linearized(lin, t_leaves)])

  primal_out = tree_util.tree_unflatten(out_tree, outs)
  if has_aux:
    return primal_out, f_jvp, _aux_tree(store, res[2])
  return primal_out, f_jvp


def _check_linearized_tangent(t, primal_aval):
  """The tangent for `primal_aval` (a weakly typed scalar converted); ValueError otherwise."""
  ta, expected = get_aval(t), ad.tangent_aval(primal_aval)
  if ta.shape != expected.shape or (ta.dtype != expected.dtype and not ta.weak_type):
    raise ValueError(f"linearized function called on tangent values inconsistent with the "
                     f"original primal values: got tangent aval {ta.str_short()} for primal "
                     f"aval {primal_aval.str_short()} but expected {expected.str_short()}.")
  if ta.dtype != expected.dtype and expected.dtype != dtypes.float0:
    from revax._src.lax.conversion import convert_element_type
    return convert_element_type(t, expected.dtype)
  return t


# --- reverse mode ----------------------------------------------------------------------------------
def apply_vjp(lin, out_tree, out_avals, in_avals, p_tree, cotangent):
  """The cotangents of the primals (a pytree like them) for `cotangent` (a pytree like the
  outputs): the backward pass of a linearization `lin` (what `vjp`'s function runs)."""
  ct_leaves, ct_tree = tree_util.tree_flatten(cotangent)
  if ct_tree != out_tree:
    raise ValueError(f"unexpected tree structure of the argument to the VJP function: the "
                     f"cotangent has structure {ct_tree}, but the primal output has structure "
                     f"{out_tree}.")
  cts = []
  for ct, aval in zip(ct_leaves, out_avals, strict=True):
    ca, expected = get_aval(ct), ad.tangent_aval(aval)
    if ca.shape != aval.shape or (ca.dtype != expected.dtype and not ca.weak_type):
      raise ValueError(f"Shape/dtype of cotangent input {ca.str_short()} does not match the "
                       f"primal output {aval.str_short()} (expected cotangent "
                       f"{expected.str_short()}).")
    if ca.dtype == dtypes.float0 or expected.dtype == dtypes.float0:
      cts.append(ad.Zero(expected))
    elif ca.dtype != expected.dtype:
      from revax._src.lax.conversion import convert_element_type
      cts.append(convert_element_type(ct, expected.dtype))
    else:
      cts.append(ct)
  cts_in = ad.transpose_linearized(lin, cts)
  flat = [_materialize(c) if c is not None else _zeros_for(ad.tangent_aval(a))
          for c, a in zip(cts_in, in_avals, strict=True)]
  return _key_cotangents(tree_util.tree_unflatten(p_tree, flat))


def _key_cotangents(tree):
  """`tree` with the cotangents of array leaves (typed keys, rebuilt over their data's float0
  cotangents) as float0 arrays of the keys' shape, as JAX gives them."""
  if not tree_util.ARRAY_LEAF_TYPES:
    return tree
  return tree_util.tree_map(
      lambda x: np.zeros(x.shape, dtypes.float0) if tree_util.is_array_leaf(x) else x, tree,
      namespace=tree_util.USER_NAMESPACE)


def vjp(fun, *primals, has_aux=False):
  """`(fun(*primals), f_vjp)` where `f_vjp(cotangent)` returns one cotangent per primal.

  Example:
    >>> y, f_vjp = revax.vjp(revax.numpy.sin, 0.5)
    >>> (x_bar,) = f_vjp(1.0)
  """
  _check_callable(fun, "vjp")
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  refs = [a for a in map(get_aval, p_leaves) if isinstance(a, AbstractRef)]
  if refs:  # (as jax 0.10.2: the function runs, its VJP refuses to give a ref a cotangent)
    return _run_with_refusing_vjp(fun, primals, p_tree, refs[0], has_aux)
  store = {}
  res = ad.linearize_flat(_flat_fun(fun, p_tree, store, has_aux), p_leaves, has_aux=has_aux)
  outs, lin = res[0], res[1]
  out_tree = store["out_tree"]
  out_avals = [get_aval(o) for o in outs]
  in_avals = [get_aval(p) for p in p_leaves]

  f_vjp = VJP(lambda ct: apply_vjp(lin, out_tree, out_avals, in_avals, p_tree, ct),
              len(primals), out_tree, p_tree, getattr(fun, "__name__", type(fun).__name__))
  primal_out = tree_util.tree_unflatten(out_tree, outs)
  if has_aux:
    return primal_out, f_vjp, _aux_tree(store, res[2])
  return primal_out, f_vjp


# --- gradient refs: `vjp(...)[1].with_refs(...)` (jax 0.10.2's jax.ad names) -----------------
class _Marker:
  """A marker object of `VJP.with_refs` (all instances of one class are equal)."""
  __slots__ = ()

  def __eq__(self, other):
    return type(other) is type(self)

  def __hash__(self):
    return hash(type(self).__name__)

  def __repr__(self):
    return f"{type(self).__name__}()"


class GradRef(_Marker):
  """What a VJP called through `with_refs` returns for an argument whose gradient it
  accumulated into a Ref."""
  __slots__ = ()


class GradValue(_Marker):
  """A `with_refs` entry asking for the argument's gradient as a value (the default)."""
  __slots__ = ()


class DontWant(_Marker):
  """A `with_refs` entry asking not to compute the argument's gradient."""
  __slots__ = ()


class DidntWant(_Marker):
  """What a VJP called through `with_refs` returns for an argument given `DontWant()`."""
  __slots__ = ()


class VJP:
  """The function `vjp` returns: call it with a cotangent (like the outputs) for the
  cotangents of the primals; `with_refs(...)` binds, per positional argument of the
  differentiated function, where each gradient goes (a Ref to accumulate it into, GradValue(),
  or DontWant()).

  Example:
    >>> y, f_vjp = revax.vjp(lambda a, b: a * b, 2.0, 3.0)
    >>> g = revax.new_ref(0.0)
    >>> f_vjp.with_refs(g, revax.ad.DontWant())(1.0)
    (GradRef(), DidntWant())
    >>> g
    Ref(3., dtype=float32, weak_type=True)
  """
  __slots__ = ("fun", "_nargs", "out_tree", "in_tree", "_name")

  def __init__(self, fun, nargs: int, out_tree, in_tree, name: str = "the function"):
    self.fun, self._nargs, self.out_tree, self.in_tree = fun, nargs, out_tree, in_tree
    self._name = name

  def __call__(self, cotangent, *extra):
    if extra:
      raise TypeError(
          f"The function returned by `jax.vjp` applied to {self._name} was called with "
          f"{len(extra) + 1} arguments,\nbut functions returned by `jax.vjp` must be called with "
          "a single argument\ncorresponding to the single value returned by the function being "
          "differentiated\n(even if that returned value is a tuple or other container): for "
          "`f` returning `(x, x)`,\ncall `f_vjp((ct_a, ct_b))`, not `f_vjp(ct_a, ct_b)`.")
    return self.fun(cotangent)

  def with_refs(self, *maybe_ct_refs):
    """The VJP with gradient destinations bound: one entry (a pytree prefix of that argument)
    per positional argument of the differentiated function; none: as the plain VJP.

    Args:
      *maybe_ct_refs: per argument, a Ref (its gradient is added into it in place; the call
        returns GradRef() there), GradValue() (returned as a value) or DontWant() (the call
        returns DidntWant() there).

    Returns:
      A function of the cotangent returning the per-argument results.

    Raises:
      Exception: not one entry per positional argument (JAX's bare Exception)."""
    if not maybe_ct_refs:
      return self.fun
    if len(maybe_ct_refs) != self._nargs:
      raise Exception(f"with_refs takes one entry per positional argument of the "  # noqa: TRY002
                      f"differentiated function ({self._nargs}), got {len(maybe_ct_refs)}")
    from revax._src.lax import state

    def apply(cotangent):
      cts = self.fun(cotangent)
      out = []
      for entry, ct in zip(maybe_ct_refs, cts, strict=True):
        def bind(e, g):
          if isinstance(e, state.Ref):
            state.ref_addupdate(e, (), g)
            return GradRef()
          return DidntWant() if isinstance(e, DontWant) else g
        is_leaf = lambda e: isinstance(e, (state.Ref, _Marker))
        out.append(tree_util.tree_map(bind, entry, ct, is_leaf=is_leaf)
                   if not is_leaf(entry) else _bind_whole(entry, ct, bind))
      return tuple(out)
    return apply


def _bind_whole(entry, ct, bind):
  """One with_refs entry (a Ref or marker) standing for every leaf of one argument."""
  leaves, tree = tree_util.tree_flatten(ct)
  if len(leaves) == 1 and tree_util.treedef_is_leaf(tree):
    return bind(entry, leaves[0])
  return tree_util.tree_unflatten(tree, [bind(entry, g) for g in leaves])


def _argnums_tuple(argnums, nargs, fname):
  single = isinstance(argnums, int)
  try:
    nums = (argnums,) if single else tuple(argnums)
  except TypeError:
    raise TypeError(f"{fname}: argnums must be an int or a tuple of ints, got {argnums!r}"
                    ) from None
  for a in nums:
    if not isinstance(a, int):
      raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    if a < -nargs:
      raise ValueError(f"Positional argument indices, e.g. for `argnums`, must have value "
                       f"greater than or equal to -len(args) and less than len(args), but got "
                       f"value {a} for len(args) == {nargs}.")
    if a >= nargs:
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{a + 1} positional arguments to be passed by the caller, but got only "
                      f"{nargs} positional arguments.")
  nums = tuple(a % nargs for a in nums)
  if len(set(nums)) != len(nums):
    raise TypeError(f"{fname}: argnums={argnums!r} names an argument more than once; each "
                    "positional argument can be differentiated with respect to only once")
  return single, nums


def _check_input_dtype(x, allow_int, holomorphic, fname):
  if tree_util.is_array_leaf(x):  # typed keys: integer-like (float0 cotangents)
    if holomorphic or not allow_int:
      raise TypeError(f"{fname} requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but got {x.dtype}. If you want to use "
                      f"Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
    return
  dt = get_aval(x).dtype
  if holomorphic and not dtypes.is_complex(dt):
    raise TypeError(f"{fname} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dt.name}.")
  if not allow_int and not dtypes.is_inexact(dt):
    raise TypeError(f"{fname} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use Boolean- "
                    f"or integer-valued inputs, use vjp or set allow_int to True.")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """A function returning `(fun(*args), gradient)` with respect to the `argnums` arguments.

  Example:
    >>> loss, g = revax.value_and_grad(lambda w: (w ** 2).sum())(jnp.array([1., 2.]))
    >>> loss, g
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
  """
  _check_callable(fun, "value_and_grad")

  @wrapping.wraps(fun)
  def value_and_grad_f(*args, **kwargs):
    single, nums = _argnums_tuple(argnums, len(args), "value_and_grad")
    diff_args = tuple(args[i] for i in nums)
    for leaf in tree_util.tree_leaves(diff_args, namespace=tree_util.USER_NAMESPACE):
      _check_input_dtype(leaf, allow_int, holomorphic, "grad")

    def partial_fun(*dargs):
      full = list(args)
      for i, a in zip(nums, dargs):
        full[i] = a
      return fun(*full, **kwargs)

    res = vjp(partial_fun, *diff_args, has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    aval = get_aval(out) if not isinstance(out, (tuple, list, dict)) else None
    if aval is None or aval.shape != ():
      shape = aval.shape if aval is not None else type(out).__name__
      raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                      f"{shape}.")
    if not dtypes.is_inexact(aval.dtype):
      raise TypeError(f"grad requires real- or complex-valued outputs (output dtype that is a "
                      f"sub-dtype of np.inexact), but got {aval.dtype.name}. For holomorphic "
                      f"differentiation, pass holomorphic=True.")
    if dtypes.is_complex(aval.dtype) and not holomorphic:
      raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of "
                      f"np.floating), but got {aval.dtype.name}. For holomorphic "
                      f"differentiation, pass holomorphic=True.")
    # the seed keeps the output's weak type, so a gradient at a Python scalar stays weak (JAX)
    seed = conversion.convert_element_type(creation.full((), 1, aval.dtype), aval.dtype,
                                           aval.weak_type)
    seed = creation.vary_like(seed, out)  # (inside shard_map: varying as the output, as JAX)
    grads = f_vjp(seed)
    g = grads[0] if single else tuple(grads)
    if has_aux:
      return (out, res[2]), g
    return out, g

  return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The gradient of scalar-valued `fun` with respect to the `argnums` arguments.

  Args:
    fun: function returning a real scalar (or `(scalar, aux)` with has_aux).
    argnums: int or tuple of ints: which positional arguments to differentiate.
    has_aux: `fun` returns `(output, aux)`; the gradient function returns `(grad, aux)`.

  Example:
    >>> revax.grad(lambda x: revax.numpy.sin(x) ** 2)(0.3)
    Array(0.5646425, dtype=float32, weak_type=True)
  """
  _check_callable(fun, "grad")
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @wrapping.wraps(fun)
  def grad_f(*args, **kwargs):
    (out, aux), g = vg(*args, **kwargs) if has_aux else ((None, None), vg(*args, **kwargs)[1])
    return (g, aux) if has_aux else g

  return grad_f


# --- jacobians -------------------------------------------------------------------------------------
def _std_basis(leaves):
  """The identity basis over all elements of `leaves`: per leaf, an array of shape
  (N, *leaf.shape) where N is the total number of elements."""
  avals = [get_aval(x) for x in leaves]
  sizes = [a.size for a in avals]
  total = sum(sizes)
  dtype = dtypes.promote_types_weak(*((a.dtype, False) for a in avals))[0] if avals else np.float32
  eye = np.eye(total, dtype=dtype)
  out, start = [], 0
  for a, n in zip(avals, sizes):
    block = eye[:, start:start + n].reshape((total,) + a.shape).astype(a.dtype)
    out.append(conversion.convert_element_type(block, a.dtype, a.weak_type))
    start += n
  return out


def _split_trailing(x, in_avals, axis_first: bool, example=None):
  """Split the flattened-element axis of `x` (leading if axis_first, else trailing) into one
  block per input aval, reshaped to that input's shape. Each block takes the dtype and weak type
  of `example` (an aval), or else of its own input aval, as JAX's Jacobians do."""
  from revax._src.lax import shapes, slicing
  aval = get_aval(x)
  blocks, start = [], 0
  for a in in_avals:
    if axis_first:
      rest = aval.shape[1:]
      piece = slicing.slice(x, (start,) + (0,) * len(rest), (start + a.size,) + rest)
      block = shapes.reshape(piece, a.shape + rest)
    else:
      lead = aval.shape[:-1]
      piece = slicing.slice(x, (0,) * len(lead) + (start,), lead + (start + a.size,))
      block = shapes.reshape(piece, lead + a.shape)
    blocks.append(_cast_like(block, a if example is None else example))
    start += a.size
  return blocks


def _cast_like(x, aval):
  """`x` with the dtype and weak type of `aval` (the real part of a complex `x` for a real
  aval)."""
  from revax._src.lax.unary import real
  xa = get_aval(x)
  if dtypes.is_complex(xa.dtype) and not dtypes.is_complex(aval.dtype):
    x = real(x)
  if aval.dtype == dtypes.float0:
    return x
  return conversion.convert_element_type(x, aval.dtype, aval.weak_type)


def _partial(fun, args, kwargs, nums, d_tree):
  def partial_fun(*dl):
    full = list(args)
    for i, a in zip(nums, tree_util.tree_unflatten(d_tree, dl)):
      full[i] = a
    return fun(*full, **kwargs)
  return partial_fun


def _unpack(single, jac_per_in, d_tree):
  tree = tree_util.tree_unflatten(d_tree, jac_per_in)
  return tree[0] if single else tree


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Jacobian of `fun` by forward mode: vmap of jvp over the standard basis of the inputs.
  Each output leaf's Jacobian has shape `out.shape + in.shape`."""
  from revax._src.vmap import vmap
  _check_callable(fun, "jacfwd")

  @wrapping.wraps(fun)
  def jac_f(*args, **kwargs):
    single, nums = _argnums_tuple(argnums, len(args), "jacfwd")
    d_leaves, d_tree = tree_util.tree_flatten(tuple(args[i] for i in nums))
    for leaf in d_leaves:
      _check_input_dtype(leaf, False, holomorphic, "jacfwd")
    partial_fun = _partial(fun, args, kwargs, nums, d_tree)
    in_avals = [get_aval(x) for x in d_leaves]

    def pushfwd(*basis):
      res = jvp(partial_fun, tuple(d_leaves), tuple(basis), has_aux=has_aux)
      return res if has_aux else (res[0], res[1])

    out_axes = (None, -1, None) if has_aux else (None, -1)
    res = vmap(pushfwd, out_axes=out_axes)(*_std_basis(d_leaves))
    jac = tree_util.tree_map(
        lambda y, j: _unpack(single, _split_trailing(j, in_avals, False, get_aval(y)), d_tree),
        res[0], res[1])
    return (jac, res[2]) if has_aux else jac

  return jac_f


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The Jacobian of `fun` by reverse mode: vmap of the VJP over the standard basis of the
  outputs. Each output leaf's Jacobian has shape `out.shape + in.shape`."""
  from revax._src.vmap import vmap
  _check_callable(fun, "jacrev")

  @wrapping.wraps(fun)
  def jac_f(*args, **kwargs):
    single, nums = _argnums_tuple(argnums, len(args), "jacrev")
    d_leaves, d_tree = tree_util.tree_flatten(tuple(args[i] for i in nums))
    for leaf in d_leaves:
      _check_input_dtype(leaf, allow_int, holomorphic, "jacrev")
    partial_fun = _partial(fun, args, kwargs, nums, d_tree)
    res = vjp(partial_fun, *d_leaves, has_aux=has_aux)
    out, f_vjp = res[0], res[1]
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_avals = [get_aval(o) for o in out_leaves]
    for a in out_avals:
      _check_output_dtype_revderiv("jacrev", holomorphic, a.dtype)
    cts = vmap(lambda *basis: f_vjp(tree_util.tree_unflatten(out_tree, basis)))(
        *_std_basis(out_leaves))
    # cts: per input leaf, shape (M, *in.shape); split M into one block per output leaf
    per_in = [_split_trailing(c, out_avals, True, get_aval(x)) for c, x in
              zip(cts, d_leaves, strict=True)]
    jac_leaves = [_unpack(single, [blocks[j] for blocks in per_in], d_tree)
                  for j in range(len(out_leaves))]
    jac = tree_util.tree_unflatten(out_tree, jac_leaves)
    return (jac, res[2]) if has_aux else jac

  return jac_f


def _check_output_dtype_revderiv(name, holomorphic, dtype):
  """Reverse-mode Jacobians need real floating outputs (complex ones with holomorphic=True)."""
  if holomorphic:
    if not dtypes.is_complex(dtype):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, but "
                      f"got {dtype.name}.")
  elif dtypes.is_complex(dtype):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                    f"holomorphic=True. For differentiation of non-holomorphic functions "
                    f"involving complex outputs, use vjp directly.")
  elif not dtypes.is_inexact(dtype):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dtype.name}. For differentiation of functions with "
                    f"integer outputs, use vjp directly.")


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Hessian of scalar `fun`: jacfwd(jacrev(fun))."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


def linear_transpose(fun, *primals):
  """The transpose of linear `fun` at arguments shaped like `primals`:
  returns `f_t(cotangent) -> tuple of input cotangents`."""
  _check_callable(fun, "linear_transpose")
  from revax._src.interpreters import staging, transpose
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  in_avals = [_abstractify(p) for p in p_leaves]
  for a in in_avals:
    if not dtypes.is_inexact(a.dtype):
      raise TypeError(f"linear_transpose only supports float and complex inputs, got "
                      f"{a.dtype.name}")
  store = {}
  jaxpr, consts = staging.trace_to_jaxpr(_flat_fun(fun, p_tree, store), in_avals)
  out_tree = store["out_tree"]

  def f_t(cotangent):
    ct_leaves, ct_tree = tree_util.tree_flatten(cotangent)
    if ct_tree != out_tree:
      raise TypeError(f"cotangent tree structure {ct_tree} does not match the output structure "
                      f"{out_tree}")
    undefined = [ad.UndefinedPrimal(a) for a in in_avals]
    cts = transpose.backward_pass(jaxpr, consts, undefined, ct_leaves)
    return tuple(tree_util.tree_unflatten(p_tree, [_materialize(c) for c in cts]))

  return f_t
