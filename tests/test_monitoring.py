"""revax.monitoring: listeners of each kind receive what is recorded, and unregister/clear."""
import pytest

import revax.monitoring as mon


def test_listeners_receive_events_and_unregister():
  got = []
  listeners = [
    (mon.register_event_listener, mon.unregister_event_listener, lambda e, **k: got.append(
        ("event", e, k))),
    (mon.register_event_duration_secs_listener, mon.unregister_event_duration_listener,
     lambda e, d, **k: got.append(("duration", e, d, k))),
    (mon.register_event_time_span_listener, mon.unregister_event_time_span_listener,
     lambda e, s, t, **k: got.append(("span", e, s, t, k))),
    (mon.register_scalar_listener, mon.unregister_scalar_listener,
     lambda e, v, **k: got.append(("scalar", e, v, k))),
  ]
  for register, _, callback in listeners:
    register(callback)
  try:
    mon.record_event("/a", step=1)
    mon.record_event_duration_secs("/b", 0.5)
    mon.record_event_time_span("/c", 1.0, 2.0, k="v")
    mon.record_scalar("/d", 3)
  finally:
    for _, unregister, callback in listeners:
      unregister(callback)
  assert got == [("event", "/a", {"step": 1}), ("duration", "/b", 0.5, {}),
                 ("span", "/c", 1.0, 2.0, {"k": "v"}), ("scalar", "/d", 3, {})]
  mon.record_event("/a")
  assert len(got) == 4
  with pytest.raises(AssertionError):
    mon.unregister_event_listener(listeners[0][2])


def test_clear_event_listeners_clears_every_kind():
  got = []
  mon.register_event_listener(lambda e, **k: got.append(e))
  mon.register_scalar_listener(lambda e, v, **k: got.append(e))
  mon.clear_event_listeners()
  mon.record_event("/x")
  mon.record_scalar("/y", 1)
  assert got == []
