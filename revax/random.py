"""revax.random: JAX's PRNG (threefry2x32) and samplers, with the same keys and values.

`PRNGKey(seed)` gives raw uint32[2] keys and `key(seed)` typed keys; every function takes either.
"""
from revax._src.random.keys import PRNGKey as PRNGKey
from revax._src.random.keys import PRNGKeyArray as PRNGKeyArray
from revax._src.random.keys import fold_in as fold_in
from revax._src.random.keys import key as key
from revax._src.random.keys import key_data as key_data
from revax._src.random.keys import key_impl as key_impl
from revax._src.random.keys import split as split
from revax._src.random.keys import wrap_key_data as wrap_key_data
from revax._src.random.samplers import bernoulli as bernoulli
from revax._src.random.samplers import beta as beta
from revax._src.random.samplers import bits as bits
from revax._src.random.samplers import categorical as categorical
from revax._src.random.samplers import choice as choice
from revax._src.random.samplers import dirichlet as dirichlet
from revax._src.random.samplers import exponential as exponential
from revax._src.random.samplers import gamma as gamma
from revax._src.random.samplers import loggamma as loggamma
from revax._src.random.samplers import normal as normal
from revax._src.random.samplers import permutation as permutation
from revax._src.random.samplers import randint as randint
from revax._src.random.samplers import truncated_normal as truncated_normal
from revax._src.random.samplers import uniform as uniform
from revax._src.random.distributions import ball as ball
from revax._src.random.distributions import cauchy as cauchy
from revax._src.random.distributions import chisquare as chisquare
from revax._src.random.distributions import clone as clone
from revax._src.random.distributions import double_sided_maxwell as double_sided_maxwell
from revax._src.random.distributions import f as f
from revax._src.random.distributions import generalized_normal as generalized_normal
from revax._src.random.distributions import geometric as geometric
from revax._src.random.distributions import gumbel as gumbel
from revax._src.random.distributions import key_dtype as key_dtype
from revax._src.random.distributions import laplace as laplace
from revax._src.random.distributions import logistic as logistic
from revax._src.random.distributions import lognormal as lognormal
from revax._src.random.distributions import maxwell as maxwell
from revax._src.random.distributions import pareto as pareto
from revax._src.random.distributions import poisson as poisson
from revax._src.random.distributions import rademacher as rademacher
from revax._src.random.distributions import rayleigh as rayleigh
from revax._src.random.distributions import t as t
from revax._src.random.distributions import triangular as triangular
from revax._src.random.distributions import wald as wald
from revax._src.random.distributions import weibull_min as weibull_min
