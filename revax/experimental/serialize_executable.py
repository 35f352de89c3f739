"""Compiled programs as bytes (JAX's `jax.experimental.serialize_executable`)."""
from revax._src.serialize_executable import deserialize_and_load as deserialize_and_load
from revax._src.serialize_executable import serialize as serialize
