"""The sm3 optimizer against jax.example_libraries.optimizers.sm3, on a pytree mixing scalars,
vectors and matrices, eagerly and under jit."""
import jax
import jax.example_libraries.optimizers as jopt
import numpy as np

import revax
import revax.example_libraries.optimizers as ropt


def test_sm3_matches_jax():
  p = {"w": np.arange(6., dtype=np.float32).reshape(2, 3) / 5, "b": np.float32(0.5),
       "v": np.ones(4, np.float32)}
  grads = [jax.tree.map(lambda x, k=k: np.sin(np.asarray(x) * 3 + k).astype(np.float32), p)
           for k in range(3)]
  results = []
  for mod, jit in ((jopt, jax.jit), (ropt, revax.jit)):
    init, update, get_params = mod.sm3(0.1, momentum=0.8)
    state = init(p)
    step = jit(update)
    for i, g in enumerate(grads):
      state = step(i, g, state)
    results.append(get_params(state))
  for key in p:
    np.testing.assert_allclose(results[1][key], results[0][key], rtol=1e-6)
    assert np.shape(results[1][key]) == np.shape(p[key])
