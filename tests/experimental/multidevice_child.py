"""Run with 4 CPU devices as `multidevice_child.py jax|revax` (see test_multidevice.py): the
same mesh_utils / multihost_utils program on either library prints one line per check; the test
compares the two transcripts."""
import sys

import numpy as np

from tests.sharding.children import show, spec_of

if sys.argv[1] == "jax":
  import jax as lib
  import jax.numpy as lnp
  from jax.experimental import mesh_utils, multihost_utils
else:
  import revax as lib
  import revax.numpy as lnp
  from revax.experimental import mesh_utils, multihost_utils
P = lib.sharding.PartitionSpec
ids = lambda m: np.vectorize(lambda d: d.id, otypes=[int])(m).tolist()  # noqa: E731

for shape in ((4,), (2, 2), (1, 4), (4, 1, 1)):
  show(f"create_device_mesh {shape}", lambda: (ids(mesh_utils.create_device_mesh(shape)),
                                               mesh_utils.create_device_mesh(shape).dtype))
show("reversed devices", lambda: ids(mesh_utils.create_device_mesh((2, 2),
                                                                    lib.devices()[::-1])))
show("wrong count", lambda: mesh_utils.create_device_mesh((3,)))
show("hybrid (2,2)x(1,1)", lambda: ids(mesh_utils.create_hybrid_device_mesh(
    (2, 2), (1, 1), process_is_granule=True)))
show("hybrid (4,)x(2,)", lambda: mesh_utils.create_hybrid_device_mesh(
    (4,), (2,), process_is_granule=True))

mesh = lib.sharding.Mesh(mesh_utils.create_device_mesh((2, 2)), ("a", "b"))
local = np.arange(16.).reshape(4, 4)
g = multihost_utils.host_local_array_to_global_array(local, mesh, P("a", "b"))
show("global spec", lambda: spec_of(g.sharding))
show("global value", lambda: (np.asarray(g).tolist(), g.dtype))
show("global shards", lambda: sorted((s.device.id, np.asarray(s.data).tolist())
                                     for s in g.addressable_shards))
show("gather", lambda: multihost_utils.process_allgather(g).tolist())
show("gather tiled", lambda: multihost_utils.process_allgather(g, tiled=True).shape)
r = multihost_utils.host_local_array_to_global_array({"x": lnp.ones(4)}, mesh, {"x": P()})
show("replicated spec", lambda: spec_of(r["x"].sharding))
h = multihost_utils.global_array_to_host_local_array(g, mesh, P("a", "b"))
show("host local spec", lambda: (spec_of(h.sharding), np.asarray(h).tolist()))
show("broadcast", lambda: multihost_utils.broadcast_one_to_all(g).tolist())
show("assert_equal", lambda: multihost_utils.assert_equal(g))
print("MULTIDEVICE_DONE")
