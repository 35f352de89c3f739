"""Lowering host callbacks to send/recv host transfers (plugins without the FFI extension).

Where the runtime says a platform's callbacks go through PJRT send/recv callbacks
(`host_transfer.callback_mechanism`), a callback lowers as JAX lowers it for TPU: a token chain
of one `stablehlo.send` per operand (device -> host) and one `stablehlo.recv` per result (host ->
device), each on its own channel and marked `is_host_transfer` with the frontend attributes
XLA's host-transfer rendezvous reads. Which operands and results travel, and the dummy send or
recv some callbacks need, are the runtime's decision (`host_transfer.register_site`); results
that do not travel (empty arrays) are made here as constants. An ordered callback threads the
body's ordering token through its chain; the others start from a fresh token.
"""
from __future__ import annotations

import numpy as np

from revax._src.core.avals import ShapedArray
from revax._src.interpreters import mlir
from revax._src.runtime import host_transfer

__all__ = ["lower_callback_with_transfers"]

_HANDLER_NAME = "pjrt_rendezvous"  # what JAX names XLA's host-transfer handler


def _transfer_attrs(channel: int, kind: int) -> tuple[dict, dict]:
  props = {"channel_handle": f"#stablehlo.channel_handle<handle = {channel}, type = {kind}>",
           "is_host_transfer": "true"}
  attrs = {"mhlo.frontend_attributes": f'{{_xla_host_transfer_handler_name = "{_HANDLER_NAME}",'
                                       f' _xla_host_transfer_rendezvous = "{channel}"}}'}
  return props, attrs


def lower_callback_with_transfers(ctx, args, host_callback, *, ordered: bool,
                                  wait: bool) -> list[str]:
  """Emit the send/recv chain of one callback; returns its result values.

  Args:
    ctx: the lowering context (`avals_in`/`avals_out` are the callback's operands/results).
    args: the operand values.
    host_callback: `f(*numpy operands) -> results`, run on the host.
    ordered: thread the body's ordering token through the chain.
    wait: the program waits for the callback to finish (side effects), even without results.
  """
  fb = ctx.fb
  avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
  site = host_transfer.register_site(host_callback, [(a.shape, a.dtype) for a in avals_in],
                                     [(a.shape, a.dtype) for a in avals_out], wait=wait)
  if ordered:
    token = fb.ordering_token()
  else:
    (token,) = fb.op("stablehlo.after_all", [], [mlir.TOKEN_TYPE])
  for channel, index in site.sends:
    if index is None:  # a callback without (non-empty) operands still needs one send to run
      value = fb.constant(np.zeros(1, np.float32), ShapedArray((1,), np.dtype(np.float32)))
    else:
      value = args[index]
    props, attrs = _transfer_attrs(channel, host_transfer.SEND_TO_HOST)
    (token,) = fb.op("stablehlo.send", [value, token], [mlir.TOKEN_TYPE], props=props,
                     attrs=attrs)
  outs: list = [None] * len(avals_out)
  for channel, index in site.recvs:
    aval = ShapedArray((), np.dtype(np.float32)) if index is None else avals_out[index]
    props, attrs = _transfer_attrs(channel, host_transfer.RECV_FROM_HOST)
    value, token = fb.op("stablehlo.recv", [token], [mlir.ir_type(aval), mlir.TOKEN_TYPE],
                         props=props, attrs=attrs)
    if index is not None:
      outs[index] = value
  for i, aval in enumerate(avals_out):
    if outs[i] is None:  # empty arrays do not travel
      outs[i] = fb.constant(np.zeros(aval.shape, aval.dtype), aval)
  if ordered:
    fb.set_ordering_token(token)
  return outs
