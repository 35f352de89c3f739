"""Run with 4 CPU devices (see test_out_sharding.py): each lax function that takes JAX's
`out_sharding=` places its result so, eagerly and under jit, with the values it has without.
(nn.initializers.orthogonal/delta_orthogonal take the keyword but refuse any sharding with
NotImplementedError, as JAX's do.)"""
import numpy as np

import revax
import revax.numpy as rnp
from revax import lax
from revax.sharding import NamedSharding, PartitionSpec as P
from tests.sharding.children import spec_of

mesh = revax.make_mesh((4,), ("x",))
rows = NamedSharding(mesh, P("x"))
x = rnp.arange(32.0).reshape(8, 4)
groups = rnp.array([3, 5], rnp.int32)
w = rnp.stack([rnp.eye(4), 2 * rnp.eye(4)])
rng_key = rnp.array([1, 2, 3, 4], rnp.uint32)
cases = {
    "empty": lambda s: lax.empty((8, 4), np.float32, out_sharding=s),
    "reduce": lambda s: lax.reduce(x.reshape(8, 2, 2), 0.0, lax.add, (2,), out_sharding=s),
    "reduce_variadic": lambda s: lax.reduce((x, x), (0.0, 0.0),
                                            lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,),
                                            out_sharding=s)[0],
    "ragged_dot": lambda s: lax.ragged_dot(x, w, groups, out_sharding=s),
    "rng_bit_generator": lambda s: lax.rng_bit_generator(rng_key, (8, 4), out_sharding=s)[1],
}
for name, fn in cases.items():
  plain = fn(None)
  for label, out in (("eager", fn(rows)), ("jit", revax.jit(lambda: fn(rows))())):
    assert spec_of(out.sharding) == ("x",), (name, label, out.sharding)
    assert len(out.addressable_shards) == 4, (name, label)
    if name != "empty":  # empty's contents are unspecified
      # (eager and compiled factorizations may differ in the last bit)
      np.testing.assert_allclose(np.asarray(out), np.asarray(plain), rtol=1e-6, atol=1e-6,
                                 err_msg=name)
print("OUT_SHARDING_OK")
