"""pbroadcast, pswapaxes, pcast, ragged_all_to_all and psend/precv: values, JVPs, VJPs and errors
against jax, on 4 CPU devices in one subprocess (collectives_more_child.py)."""
from tests.sharding.children import run_child


def test_four_devices_against_jax():
  run_child("collectives_more_child.py", "COLLECTIVES_MORE_OK")
