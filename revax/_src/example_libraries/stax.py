"""stax: a small neural-network library of (init_fun, apply_fun) pairs, as
jax.example_libraries.stax.

A layer is a pair of functions: `init_fun(rng, input_shape) -> (output_shape, params)` and
`apply_fun(params, inputs, **kwargs) -> outputs`. Combinators (`serial`, `parallel`, `FanOut`,
`FanInSum`, `FanInConcat`) build networks out of layers; `apply_fun` accepts an `rng` keyword,
split among the layers (Dropout needs it).

Example:
  >>> from revax.example_libraries.stax import serial, Dense, Relu, LogSoftmax
  >>> init_fun, apply_fun = serial(Dense(32), Relu, Dense(10), LogSoftmax)
  >>> out_shape, params = init_fun(revax.random.PRNGKey(0), (-1, 784))
  >>> out_shape
  (-1, 10)
  >>> logits = apply_fun(params, jnp.zeros((2, 784)))  # a batch of two images
  >>> jnp.exp(logits).sum(axis=1)  # log-probabilities over the 10 classes
  Array([1., 1.], dtype=float32)
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from revax._src import lax
from revax._src.core.avals import get_aval
from revax._src.nn import functions as nn
from revax._src.nn.initializers import glorot_normal, normal, ones, zeros
from revax._src.numpy import creation, shape_ops, ufuncs
from revax._src.numpy.contractions import matmul
from revax._src.random.keys import split as _split
from revax._src.random.samplers import bernoulli

# the activation functions and initializers stax re-exports under their jax.nn names
relu = nn.relu
log_softmax = nn.log_softmax
softmax = nn.softmax
softplus = nn.softplus
sigmoid = nn.sigmoid
elu = nn.elu
leaky_relu = nn.leaky_relu
selu = nn.selu
gelu = nn.gelu
standardize = nn.standardize
logsoftmax = log_softmax  # the old name
glorot = glorot_normal
randn = normal


def _shape(x):
  return tuple(get_aval(x).shape)


# --- layers with parameters ----------------------------------------------------------------------
def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully connected layer: inputs (..., in_dim) @ W (in_dim, out_dim) + b (out_dim,)."""

  def init_fun(rng, input_shape):
    output_shape = tuple(input_shape[:-1]) + (out_dim,)
    k1, k2 = _split(rng)
    return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return ufuncs.add(matmul(inputs, W), b)

  return init_fun, apply_fun


def _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape):
  lhs_spec, rhs_spec, _ = dimension_numbers
  spatial = iter(filter_shape)
  return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
          for c in rhs_spec]


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
  """A convolution layer with layouts given by `dimension_numbers` (lhs, rhs, out specs such
  as ('NHWC', 'HWIO', 'NHWC')), `out_chan` output channels and a `filter_shape` window."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  ones_ = (1,) * len(filter_shape)
  strides = strides or ones_
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
    output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                dimension_numbers)
    bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
    k1, k2 = _split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    out = lax.conv_general_dilated(inputs, W, strides, padding, ones_, ones_,
                                   dimension_numbers=dimension_numbers)
    return ufuncs.add(out, b)

  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
  """A transposed-convolution layer (layouts as in `GeneralConv`)."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  strides = strides or (1,) * len(filter_shape)
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
    output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                  dimension_numbers)
    bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
    k1, k2 = _split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    out = lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
    return ufuncs.add(out, b)

  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Batch normalization over `axis` (statistics of the current batch), with a learned shift
  (beta, if `center`) and scale (gamma, if `scale`) per remaining position."""
  axis = (axis,) if np.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = _split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    ndim = len(_shape(x))
    kept = tuple(i for i in range(ndim) if i not in axis)

    def expand(p):  # params shaped by the kept axes, broadcast against x
      return lax.broadcast_in_dim(p, _shape(x), kept)

    z = nn.standardize(x, axis, epsilon=epsilon)
    if scale:
      z = ufuncs.multiply(expand(gamma), z)
    if center:
      z = ufuncs.add(z, expand(beta))
    return z

  return init_fun, apply_fun


# --- elementwise layers --------------------------------------------------------------------------
def elementwise(fun, **fun_kwargs):
  """A parameterless layer applying `fun(x, **fun_kwargs)`."""
  init_fun = lambda rng, input_shape: (input_shape, ())
  apply_fun = lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(ufuncs.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(ufuncs.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Selu = elementwise(nn.selu)
Gelu = elementwise(nn.gelu)


# --- pooling -------------------------------------------------------------------------------------
def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """A pooling layer over `window_shape` spatial windows (layout NHWC unless `spec`)."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"),
                                                                   spec.index("C"))
    window, stride = tuple(window_shape), tuple(strides)
    for i in sorted(non_spatial):
      window = window[:i] + (1,) + window[i:]
      stride = stride[:i] + (1,) + stride[i:]

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, window, stride, padding)
      ones_ = (1,) * len(window)
      return lax.reduce_window_shape_tuple(input_shape, window, stride, pads, ones_, ones_), ()

    def apply_fun(params, inputs, **kwargs):
      dtype = get_aval(inputs).dtype
      out = lax.reduce_window(inputs, np.asarray(init_val, dtype), reducer, window, stride,
                              padding)
      return rescale(out, inputs, spec) if rescale else out

    return init_fun, apply_fun

  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -np.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    if spec is None:
      non_spatial = (0, len(_shape(inputs)) - 1)
    else:
      non_spatial = (spec.index("N"), spec.index("C"))
    spatial_shape = tuple(d for i, d in enumerate(_shape(inputs)) if i not in non_spatial)
    dtype = get_aval(inputs).dtype
    counts = lax.reduce_window(creation.ones(spatial_shape, dtype), np.asarray(0, dtype), lax.add,
                               tuple(dims), tuple(strides), padding)
    # bring the window counts into the outputs' layout: spatial axes where they are
    spatial_axes = tuple(i for i in range(len(_shape(outputs))) if i not in non_spatial)
    counts = lax.broadcast_in_dim(counts, _shape(outputs), spatial_axes)
    return ufuncs.divide(outputs, counts)

  return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


# --- reshaping and combinators -------------------------------------------------------------------
def _flatten_init(rng, input_shape):
  return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()


def _flatten_apply(params, inputs, **kwargs):
  shape = _shape(inputs)
  return shape_ops.reshape(inputs, (shape[0], math.prod(shape[1:])))


Flatten = (_flatten_init, _flatten_apply)
Identity = (lambda rng, input_shape: (input_shape, ()), lambda params, inputs, **kwargs: inputs)


def FanOut(num):
  """A layer copying its input `num` times (into a list)."""
  init_fun = lambda rng, input_shape: ([input_shape] * num, ())
  apply_fun = lambda params, inputs, **kwargs: [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum_apply(params, inputs, **kwargs):
  return functools.reduce(ufuncs.add, inputs)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()), _fan_in_sum_apply)


def FanInConcat(axis=-1):
  """A layer concatenating its list of inputs along `axis`."""

  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(shape[ax] for shape in input_shape)
    return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

  def apply_fun(params, inputs, **kwargs):
    return shape_ops.concatenate(inputs, axis)

  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """Dropout as jax's stax defines it: in 'train' mode each input is kept with probability
  `rate` (sic: `rate` is the keep probability) and divided by `rate`; other modes pass inputs
  through. `apply_fun` needs an `rng` keyword."""

  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng", None)
    if rng is None:
      raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key argument. "
                       "That is, instead of `apply_fun(params, inputs)`, call it like "
                       "`apply_fun(params, inputs, rng=rng)` where `rng` is a PRNG key (e.g. "
                       "from `revax.random.key`).")
    if mode != "train":
      return inputs
    keep = bernoulli(rng, rate, _shape(inputs))
    return ufuncs.where(keep, ufuncs.divide(inputs, rate), 0)

  return init_fun, apply_fun


def serial(*layers):
  """Layers applied one after another; params are a list with one entry per layer."""
  init_funs, apply_funs = zip(*layers, strict=True) if layers else ((), ())

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = _split(rng)
      input_shape, p = init(layer_rng, input_shape)
      params.append(p)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = _split(rng, len(layers)) if rng is not None else (None,) * len(layers)
    for fun, p, r in zip(apply_funs, params, rngs, strict=True):
      inputs = fun(p, inputs, rng=r, **kwargs)
    return inputs

  return init_fun, apply_fun


def parallel(*layers):
  """Layers applied side by side to a list of inputs (one input per layer)."""
  init_funs, apply_funs = zip(*layers, strict=True) if layers else ((), ())

  def init_fun(rng, input_shape):
    rngs = _split(rng, len(layers))
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape,
                                                          strict=True)], strict=True)

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = _split(rng, len(layers)) if rng is not None else (None,) * len(layers)
    return [f(p, x, rng=r, **kwargs)
            for f, p, x, r in zip(apply_funs, params, inputs, rngs, strict=True)]

  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built by `make_layer(input_shape)` when its input shape is known."""

  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(_shape(inputs))[1](params, inputs, **kwargs)

  return init_fun, apply_fun
