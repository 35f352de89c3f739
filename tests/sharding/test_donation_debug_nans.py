"""donate_argnums and debug_nans/debug_infs on jit over a mesh of 4 CPU devices, against jax in a
subprocess (donation_child.py): which donated arrays are deleted (those XLA reused), JAX's
warning for unusable donations, the RuntimeError for using a deleted array, real aliasing in
memory_analysis, `f(donate(a), a)` refused before any device runs; FloatingPointError for a NaN
or inf in a sharded jit's output."""

from tests.sharding.children import run_child


def test_donation_and_debug_nans_against_jax():
  run_child("donation_child.py", "DONATION_OK")
