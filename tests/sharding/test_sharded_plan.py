"""Repeated jit calls over a mesh through their ShardedPlan (call_plans.py): the same results,
shardings, commitment and errors as the general path, on the compiled call path and without it
(where no plan is made)."""
import pytest

from tests.sharding.children import run_child


@pytest.mark.parametrize("fastpath", ["1", "0"])
def test_sharded_plan_matches_the_general_path(monkeypatch, fastpath):
  monkeypatch.setenv("REVAX_FASTPATH", fastpath)
  out = run_child("sharded_plan_child.py", "PLAN DONE", args=(fastpath,), timeout=300)
  assert out.stdout.count(": ok") == 7, out.stdout
