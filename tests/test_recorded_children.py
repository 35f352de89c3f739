"""tests/recorded_children.py: jax's side of the transcript tests read from committed records
only while they are current."""
import os

import pytest

from tests import recorded_children


def test_a_current_record_is_used_and_a_stale_one_is_not(tmp_path, monkeypatch):
  monkeypatch.delenv("REVAX_LIVE_ORACLE", raising=False)
  script = tmp_path / "child.py"
  script.write_text("import sys\nprint('ran with', sys.argv[1])\n")
  env = dict(os.environ)
  monkeypatch.setenv("REVAX_RECORD_ORACLE", "1")
  live = recorded_children.run_jax(str(script), ("jax",), env, 60)
  assert live.stdout == "ran with jax\n"
  path = recorded_children.record_path(str(script), ("jax",))
  assert os.path.exists(path)
  monkeypatch.delenv("REVAX_RECORD_ORACLE")
  # a current record is read, not run: its text is what the record says
  header = open(path).read().partition("\n")[0]
  open(path, "w").write(f"{header}\nfrom the record\n")
  assert recorded_children.run_jax(str(script), ("jax",), env, 60).stdout == "from the record\n"
  # the program changed: the record is stale and the program runs live
  script.write_text("import sys\nprint('changed', sys.argv[1])\n")
  assert recorded_children.run_jax(str(script), ("jax",), env, 60).stdout == "changed jax\n"
  # another device count is another key
  script.write_text("import sys\nprint('ran with', sys.argv[1])\n")
  other = dict(env, XLA_FLAGS="--xla_force_host_platform_device_count=3")
  assert recorded_children.run_jax(str(script), ("jax",), other, 60).stdout == "ran with jax\n"


@pytest.mark.parametrize("args", [("jax",), ("jax", "eager")])
def test_records_live_beside_their_programs(args):
  path = recorded_children.record_path("/x/tests/sharding/keys_child.py", args)
  assert path == "/x/tests/sharding/expected/keys_child" + (".eager" if len(args) > 1 else "") \
      + ".jax.txt"


def test_records_name_the_checkout_of_the_clone_that_reads_them(tmp_path, monkeypatch):
  # messages name the programs' paths: a record made in one clone reads as the other's
  monkeypatch.delenv("REVAX_LIVE_ORACLE", raising=False)
  script = tmp_path / "child.py"
  script.write_text("print(__file__)\n")
  monkeypatch.setattr(recorded_children, "ROOT", str(tmp_path))
  monkeypatch.setenv("REVAX_RECORD_ORACLE", "1")
  recorded_children.run_jax(str(script), ("jax",), dict(os.environ), 60)
  monkeypatch.delenv("REVAX_RECORD_ORACLE")
  path = recorded_children.record_path(str(script), ("jax",))
  assert str(tmp_path) not in open(path).read()
  monkeypatch.setattr(recorded_children, "ROOT", "/another/clone")
  out = recorded_children.run_jax(str(script), ("jax",), dict(os.environ), 60)
  assert out.stdout == "/another/clone/child.py\n"
