"""Asynchronous dispatch of multi-device calls (runtime/client.py `_InFlight`), on the compiled
call path and on the ctypes one: chains of launches with collectives, donation, arguments freed
while a launch runs, several threads."""
import pytest

from tests.sharding.children import run_child


@pytest.mark.parametrize("fastpath", ["1", "0"])
def test_async_dispatch_of_multi_device_launches(monkeypatch, fastpath):
  monkeypatch.setenv("REVAX_FASTPATH", fastpath)
  out = run_child("async_dispatch_child.py", "ASYNC DONE", timeout=300)
  assert out.stdout.count(": ok") == 6, out.stdout
