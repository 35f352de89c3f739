"""jax.scipy.special and jax.nn functions a model zoo calls (softmax with where, logsumexp with
b and return_sign, one_hot, activations, standardize), and jnp.einsum in the forms users write,
with einsum_path, optimize flags and preferred_element_type."""
import jax
import jax.numpy as jnp
import jax.scipy.special as sp

x = jnp.array([-3.0, -0.5, 0.0, 0.5, 3.0])
print("softmax:", jax.nn.softmax(x))
print("softmax where:", jax.nn.softmax(x, where=x > -1))
print("log_softmax axis:", jax.nn.log_softmax(jnp.arange(6.0).reshape(2, 3), axis=0))
print("softmax grad:", jax.grad(lambda z: jax.nn.softmax(z)[0])(jnp.array([1.0, 2.0, 3.0])))
print("logsumexp:", jax.nn.logsumexp(x), sp.logsumexp(x, b=jnp.array([1.0, 1.0, -1.0, 1.0, 0.5])))
print("logsumexp return_sign:", sp.logsumexp(jnp.array([0.0, 1.0]), b=jnp.array([1.0, -1.0]), return_sign=True))
print("logsumexp keepdims -inf:", sp.logsumexp(jnp.array([[-jnp.inf, -jnp.inf], [0.0, 0.0]]), axis=1, keepdims=True))
print("one_hot:", jax.nn.one_hot(jnp.array([0, 2, -1, 5]), 3))
print("one_hot dtype/axis:", jax.nn.one_hot(jnp.array([1, 0]), 3, dtype=jnp.int32, axis=0))
for name in ["relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "log_sigmoid", "elu", "leaky_relu",
             "hard_tanh", "celu", "selu", "gelu", "hard_sigmoid", "hard_silu", "mish", "squareplus", "sparse_plus"]:
  print(f"{name}:", getattr(jax.nn, name)(x))
print("gelu exact:", jax.nn.gelu(x, approximate=False))
print("glu:", jax.nn.glu(jnp.arange(4.0)))
print("standardize:", jax.nn.standardize(jnp.array([[1.0, 2.0, 3.0], [2.0, 2.0, 5.0]]), axis=-1))
print("relu grad at 0:", jax.grad(jax.nn.relu)(0.0), jax.grad(jax.nn.relu6)(6.0))
print("activations jit vmap:", jax.jit(jax.vmap(jax.grad(jax.nn.gelu)))(x))

print("expit/logit:", sp.expit(x), sp.logit(jnp.array([0.25, 0.5, 0.9])))
print("gammaln/gamma:", sp.gammaln(jnp.array([0.5, 3.0, 10.0])), sp.gamma(jnp.array([0.5, 4.0])))
print("digamma/polygamma:", sp.digamma(jnp.array([0.5, 2.0])), sp.polygamma(1, jnp.array([1.0, 2.0])))
print("betaln/betainc:", sp.betaln(2.0, 3.0), sp.betainc(2.0, 3.0, jnp.array([0.2, 0.7])))
print("gammainc/gammaincc:", sp.gammainc(2.0, jnp.array([0.5, 3.0])), sp.gammaincc(2.0, 3.0))
print("erf family:", sp.erf(0.3), sp.erfc(1.5), sp.erfinv(jnp.array([-0.5, 0.9])))
print("ndtr/ndtri/log_ndtr:", sp.ndtr(1.0), sp.ndtri(jnp.array([0.025, 0.5])), sp.log_ndtr(jnp.array([-10.0, 0.0])))
print("bessel:", sp.i0(1.0), sp.i0e(jnp.array([1.0, 20.0])), sp.i1(1.0), sp.i1e(2.0))
print("xlogy/xlog1py:", sp.xlogy(jnp.array([0.0, 2.0]), jnp.array([0.0, 3.0])), sp.xlog1py(0.0, -1.0), sp.entr(jnp.array([0.0, 0.5, -1.0])))
print("zeta/multigammaln:", sp.zeta(2.0, 1.0), sp.multigammaln(3.0, 2))
print("kl_div/rel_entr:", sp.kl_div(0.5, 0.25), sp.rel_entr(jnp.array([0.5, 0.0]), 0.25))
print("factorial/comb:", sp.factorial(jnp.array([0.0, 4.0])), sp.comb(5.0, 2.0), sp.factorial(5, exact=False))
print("softmax/log_softmax in scipy:", sp.softmax(jnp.array([1.0, 2.0])), sp.log_softmax(jnp.array([1.0, 2.0])))
print("grad gammaln:", jax.grad(sp.gammaln)(3.0), "vs digamma", sp.digamma(3.0))
print("grad erfinv:", jax.grad(sp.erfinv)(0.5), jax.grad(sp.betainc, argnums=2)(2.0, 3.0, 0.4))

A = jnp.arange(6.0).reshape(2, 3)
B = jnp.arange(12.0).reshape(3, 4)
C = jnp.arange(8.0).reshape(4, 2)
v = jnp.arange(3.0)
print("matmul:", jnp.einsum("ij,jk->ik", A, B))
print("implicit output:", jnp.einsum("ij,jk", A, B).shape, jnp.einsum("ji", A).shape)
print("trace/diag:", jnp.einsum("ii", jnp.eye(3) * 2), jnp.einsum("ii->i", jnp.arange(9.0).reshape(3, 3)))
print("outer/inner:", jnp.einsum("i,j->ij", v, v)[2], jnp.einsum("i,i->", v, v))
print("sum axes:", jnp.einsum("ij->", A), jnp.einsum("ij->j", A))
print("batched:", jnp.einsum("bij,bjk->bik", jnp.ones((2, 2, 3)), jnp.ones((2, 3, 1))).shape)
print("ellipsis:", jnp.einsum("...ij,...jk->...ik", jnp.ones((5, 2, 3)), B).shape, jnp.einsum("i...->...", jnp.ones((3, 2, 4))).shape)
print("chain three:", jnp.einsum("ij,jk,kl->il", A, B, C))
for opt in [True, False, "greedy", "optimal"]:
  print(f"optimize={opt}:", jnp.einsum("ij,jk,kl->il", A, B, C, optimize=opt).sum())
path, info = jnp.einsum_path("ij,jk,kl->il", A, B, C, optimize="greedy")
print("einsum_path:", path)
print("operands list form:", jnp.einsum(A, [0, 1], B, [1, 2], [0, 2]).shape)
print("preferred_element_type:", jnp.einsum("ij,jk->ik", A.astype(jnp.bfloat16), B.astype(jnp.bfloat16),
                                               preferred_element_type=jnp.float32).dtype)
print("int einsum:", repr(jnp.einsum("i,i->", jnp.arange(4), jnp.arange(4))))
print("mixed dtypes:", jnp.einsum("i,i->", jnp.arange(3), v).dtype)
print("grad einsum:", jax.grad(lambda a: jnp.einsum("ij,jk,kl->", a, B, C))(A))
print("vmap einsum:", jax.vmap(lambda a: jnp.einsum("j,jk->k", a, B))(A))
print("repeated in one operand:", jnp.einsum("iij->j", jnp.arange(12.0).reshape(2, 2, 3)))
print("tensordot/inner/vdot:", jnp.tensordot(A, B, axes=1).shape, jnp.tensordot(A, A, axes=([0, 1], [0, 1])), jnp.inner(v, v), jnp.vdot(A, A))
