"""Tests of revax.experimental (mirrors revax/_src/experimental)."""
