"""Helpers of the discrete distributions: support masks."""
from __future__ import annotations

from revax._src.numpy import ufuncs


def is_integer(k):
  return ufuncs.floor(k) == k
