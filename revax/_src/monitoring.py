"""Monitoring events (as jax.monitoring): code records named events, durations, time spans and
scalars; listeners registered here receive them. revax itself records no events yet (JAX records
e.g. '/jax/compilation_cache/...' and compile-time durations); user code and libraries can.
"""
from __future__ import annotations

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners"]

_event_listeners: list = []
_duration_listeners: list = []
_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs) -> None:
  """Call every event listener with `(event, **kwargs)`.

  Example:
    >>> import revax.monitoring as monitoring
    >>> listener = lambda event, **kw: print(event, kw)
    >>> monitoring.register_event_listener(listener)
    >>> monitoring.record_event("/my/event", step=3)
    /my/event {'step': 3}
    >>> monitoring.unregister_event_listener(listener)
  """
  for callback in list(_event_listeners):
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
  """Call every duration listener with `(event, duration, **kwargs)` (seconds)."""
  for callback in list(_duration_listeners):
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
  """Call every time-span listener with `(event, start_time, end_time, **kwargs)` (seconds)."""
  for callback in list(_time_span_listeners):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value, **kwargs) -> None:
  """Call every scalar listener with `(event, value, **kwargs)`."""
  for callback in list(_scalar_listeners):
    callback(event, value, **kwargs)


def register_event_listener(callback) -> None:
  """Have `callback(event, **kwargs)` called by `record_event`."""
  _event_listeners.append(callback)


def register_event_duration_secs_listener(callback) -> None:
  """Have `callback(event, duration_secs, **kwargs)` called by `record_event_duration_secs`."""
  _duration_listeners.append(callback)


def register_event_time_span_listener(callback) -> None:
  """Have `callback(event, start_time, end_time, **kwargs)` called by `record_event_time_span`."""
  _time_span_listeners.append(callback)


def register_scalar_listener(callback) -> None:
  """Have `callback(event, value, **kwargs)` called by `record_scalar`."""
  _scalar_listeners.append(callback)


def _unregister(listeners: list, callback, kind: str) -> None:
  if callback not in listeners:  # JAX asserts
    raise AssertionError(f"{callback!r} is not a registered {kind} listener")
  listeners.remove(callback)


def unregister_event_listener(callback) -> None:
  """Remove an event listener (AssertionError if it is not registered, as JAX)."""
  _unregister(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback) -> None:
  """Remove a duration listener (AssertionError if it is not registered, as JAX)."""
  _unregister(_duration_listeners, callback, "event duration")


def unregister_event_time_span_listener(callback) -> None:
  """Remove a time-span listener (AssertionError if it is not registered, as JAX)."""
  _unregister(_time_span_listeners, callback, "event time span")


def unregister_scalar_listener(callback) -> None:
  """Remove a scalar listener (AssertionError if it is not registered, as JAX)."""
  _unregister(_scalar_listeners, callback, "scalar")


def clear_event_listeners() -> None:
  """Remove every listener of every kind."""
  for listeners in (_event_listeners, _duration_listeners, _time_span_listeners,
                    _scalar_listeners):
    listeners.clear()
