"""revax's public exception classes, with jax.errors' names and base classes.

Programs written for JAX catch these by name (`except jax.errors.ConcretizationTypeError`) or by
their builtin base (`except TypeError`), so each class keeps JAX's place in the hierarchy:
concretization and tracer-conversion errors are TypeErrors, a traced boolean index is an
IndexError, a failure inside the compiled runtime is a RuntimeError.
"""
from __future__ import annotations


class JAXTypeError(TypeError):
  """Base of the TypeErrors that revax raises about traced values and keys."""


class JAXIndexError(IndexError):
  """Base of the IndexErrors that revax raises about traced indices."""


class ConcreteValueError(Exception):
  """Base of the errors raised where a traced value's concrete value was needed and is not known
  (concretization, integer conversion, a traced boolean index): code that can retry with
  concrete values (custom_jvp/custom_vjp under eager differentiation) catches this."""


class ConcretizationTypeError(JAXTypeError, ConcreteValueError):
  """A traced value was used where a concrete Python value is needed (a shape, a Python `if`).

  Example:
    >>> revax.jit(lambda x: x if x > 0 else -x)(1.0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    TracerBoolConversionError: Attempted bool() conversion ...
    >>> revax.jit(lambda x: jnp.where(x > 0, x, -x))(1.0)  # what to write instead
    Array(1., dtype=float32, weak_type=True)
  """


class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` of a traced value: Python control flow (`if`, `while`, `and`) on traced data."""


class TracerIntegerConversionError(JAXTypeError, ConcreteValueError):
  """`__index__` of a traced value: a traced array used where Python needs an int (range, list
  indexing)."""


class TracerArrayConversionError(JAXTypeError):
  """A traced value was converted to a NumPy array (`np.asarray(tracer)`, a NumPy function)."""


class UnexpectedTracerError(JAXTypeError):
  """A tracer escaped the transformation that created it (stored in a global or an attribute,
  then used after that transformation finished)."""


class KeyReuseError(JAXTypeError):
  """A PRNG key was consumed twice (raised when key-reuse checking is on)."""


class NonConcreteBooleanIndexError(JAXIndexError, ConcreteValueError):
  """A traced boolean mask was used as an index: the result's shape would depend on its values."""


class JaxRuntimeError(RuntimeError):
  """An error reported by the XLA runtime while compiling or executing a program."""


class JaxprTypeError(TypeError):
  """A jaxpr is ill-typed (raised by the jaxpr type checker)."""


class InconclusiveDimensionOperation(Exception):
  """A comparison of symbolic dimensions whose result is not determined (shape polymorphism)."""


# revax's own earlier name for an escaped tracer.
EscapedTracerError = UnexpectedTracerError

__all__ = ["JAXTypeError", "JAXIndexError", "ConcretizationTypeError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "TracerArrayConversionError", "UnexpectedTracerError",
           "KeyReuseError", "NonConcreteBooleanIndexError", "JaxRuntimeError", "JaxprTypeError",
           "InconclusiveDimensionOperation", "EscapedTracerError", "ConcreteValueError"]
