/* LAPACK for compiled programs: XLA FFI handlers that run eigh (?syevd / ?heevd), svd (?gesdd),
   lu (?getrf), cholesky (?potrf), eig (?geev) and schur (?gees) on the host, as jaxlib's LAPACK
   kernels do for JAX on CPU.

   A program names them with `stablehlo.custom_call @revax_lapack_<op>(...) {api_version = 4}`
   (revax/_src/lax/linalg.py writes those; revax/_src/runtime/lapack.py registers the handlers
   with the plugin). Matrices arrive column-major (the custom call asks XLA for that layout), one
   after another for the leading batch dimensions, which the handler loops over.

   This module does not link LAPACK: Python finds the LAPACKE functions of the ILP64 OpenBLAS that
   NumPy's wheel bundles (scipy_LAPACKE_*64_), and hands their addresses over with `set_lapack`.
   A handler whose function was not handed over is never named by a program (lapack.py answers
   which are available), and answers XLA with an error if it is anyway.

   Failure, as JAX: when LAPACK reports an error (a NaN in the input, which LAPACKE's NaN check
   catches, no convergence, a matrix that is not positive definite) the outputs of that matrix
   are NaN; getrf's "exactly singular" report is no failure (the factors are still valid).

   The XLA FFI structs below mirror xla/ffi/api/c_api.h (LP64); the same layouts, with their
   offsets asserted, are in revax/_src/runtime/ffi.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- XLA FFI structs */

typedef struct { size_t struct_size; int type; void *next; } ExtensionBase;
typedef struct { size_t struct_size; void *extension_start; int major; int minor; } ApiVersion;
typedef struct { size_t struct_size; ApiVersion api_version; uint32_t traits; } Metadata;
typedef struct { ExtensionBase base; Metadata *metadata; } MetadataExtension;
typedef struct {
  size_t struct_size; void *extension_start; const char *message; int errc;
} ErrorCreateArgs;
typedef void *(*ErrorCreate)(ErrorCreateArgs *);
typedef struct {
  size_t struct_size; void *extension_start; ApiVersion api_version; void *internal_api;
  ErrorCreate error_create;
} ApiHead;
typedef struct {
  size_t struct_size; void *extension_start; int dtype; void *data; int64_t rank; int64_t *dims;
} Buffer;
typedef struct {
  size_t struct_size; void *extension_start; int64_t size; int *types; void **items;
} List;
typedef struct { const char *ptr; size_t len; } ByteSpan;
typedef struct { int dtype; void *value; } Scalar;
typedef struct {
  size_t struct_size; void *extension_start; int64_t size; int *types; ByteSpan **names;
  void **attrs;
} Attrs;
typedef struct {
  size_t struct_size; void *extension_start; ApiHead *api; void *ctx; int stage; List args;
  List rets; Attrs attrs; void *future;
} CallFrame;

_Static_assert(offsetof(CallFrame, stage) == 32, "XLA_FFI_CallFrame.stage");
_Static_assert(offsetof(CallFrame, args) == 40, "XLA_FFI_CallFrame.args");
_Static_assert(offsetof(CallFrame, rets) == 80, "XLA_FFI_CallFrame.rets");
_Static_assert(offsetof(CallFrame, attrs) == 120, "XLA_FFI_CallFrame.attrs");
_Static_assert(offsetof(CallFrame, future) == 168, "XLA_FFI_CallFrame_STRUCT_SIZE");
_Static_assert(offsetof(ApiHead, error_create) == 48, "XLA_FFI_Api.XLA_FFI_Error_Create");
_Static_assert(offsetof(Buffer, dims) == 40, "XLA_FFI_Buffer.dims");
_Static_assert(offsetof(Metadata, traits) == 32, "XLA_FFI_Metadata.traits");
_Static_assert(offsetof(MetadataExtension, metadata) == 24, "XLA_FFI_Metadata_Extension");

enum { EXT_METADATA = 1, STAGE_EXECUTE = 3, ATTR_SCALAR = 3 };
enum { ERR_INVALID_ARGUMENT = 3, ERR_INTERNAL = 13 };
/* XLA_FFI_DataType */
enum { T_PRED = 1, T_S8 = 2, T_S32 = 4, T_S64 = 5, T_U8 = 6,
       T_F32 = 11, T_F64 = 12, T_C64 = 15, T_C128 = 18 };

/* ------------------------------------------------------------------------- LAPACKE (ILP64) */

typedef int64_t lapack_int;
#define COL_MAJOR 102
typedef lapack_int (*SyevdFn)(int, char, char, lapack_int, void *, lapack_int, void *);
typedef lapack_int (*GesddFn)(int, char, lapack_int, lapack_int, void *, lapack_int, void *,
                              void *, lapack_int, void *, lapack_int);
typedef lapack_int (*GetrfFn)(int, lapack_int, lapack_int, void *, lapack_int, lapack_int *);
typedef lapack_int (*PotrfFn)(int, char, lapack_int, void *, lapack_int);
/* ?geev and ?gees: real kinds take (wr, wi), complex ones (w); the pointer types differ only. */
typedef lapack_int (*GeevRealFn)(int, char, char, lapack_int, void *, lapack_int, void *, void *,
                                 void *, lapack_int, void *, lapack_int);
typedef lapack_int (*GeevComplexFn)(int, char, char, lapack_int, void *, lapack_int, void *,
                                    void *, lapack_int, void *, lapack_int);
typedef lapack_int (*GeesRealFn)(int, char, char, void *, lapack_int, void *, lapack_int,
                                 lapack_int *, void *, void *, void *, lapack_int);
typedef lapack_int (*GeesComplexFn)(int, char, char, void *, lapack_int, void *, lapack_int,
                                    lapack_int *, void *, void *, lapack_int);

/* Indexed by kind: 0 float32, 1 float64, 2 complex64, 3 complex128. */
static SyevdFn syevd_fns[4];
static GesddFn gesdd_fns[4];
static GetrfFn getrf_fns[4];
static PotrfFn potrf_fns[4];
static void *geev_fns[4];
static void *gees_fns[4];

/* CBLAS ?gemm (ILP64): real kinds take alpha and beta by value, complex ones by address. */
#define ROW_MAJOR 101
#define NO_TRANS 111
#define TRANS 112
typedef void (*GemmFloatFn)(int, int, int, lapack_int, lapack_int, lapack_int, float,
                            const void *, lapack_int, const void *, lapack_int, float, void *,
                            lapack_int);
typedef void (*GemmDoubleFn)(int, int, int, lapack_int, lapack_int, lapack_int, double,
                             const void *, lapack_int, const void *, lapack_int, double, void *,
                             lapack_int);
typedef void (*GemmComplexFn)(int, int, int, lapack_int, lapack_int, lapack_int, const void *,
                              const void *, lapack_int, const void *, lapack_int, const void *,
                              void *, lapack_int);
static void *gemm_fns[4];
/* OpenBLAS's openblas_set_num_threads_local (the calling thread's count; returns the previous). */
typedef int (*SetThreadsLocalFn)(int);
static SetThreadsLocalFn set_threads_local;

static int kind_of(int dtype) {
  switch (dtype) {
    case T_F32: return 0;
    case T_F64: return 1;
    case T_C64: return 2;
    case T_C128: return 3;
    default: return -1;
  }
}

static const size_t kind_bytes[4] = {4, 8, 8, 16};
static const size_t kind_real_bytes[4] = {4, 8, 4, 8};

/* ------------------------------------------------------------------------- helpers */

static void *error(CallFrame *f, int errc, const char *message) {
  ErrorCreateArgs args = {offsetof(ErrorCreateArgs, errc) + sizeof(int), NULL, message, errc};
  return f->api->error_create(&args);
}

/* XLA's metadata stage: answer with the framework's FFI version, no traits. */
static int answer_metadata(CallFrame *f) {
  ExtensionBase *ext = (ExtensionBase *)f->extension_start;
  if (!ext || ext->type != EXT_METADATA) return 0;
  Metadata *md = ((MetadataExtension *)ext)->metadata;
  if (!md) return 0;
  md->api_version.struct_size = offsetof(ApiVersion, minor) + sizeof(int);
  md->api_version.extension_start = NULL;
  md->api_version.major = f->api->api_version.major;
  md->api_version.minor = f->api->api_version.minor;
  md->traits = 0;
  return 1;
}

/* The integer scalar attribute `name`, or `fallback` where there is none. */
static int64_t int_attr(CallFrame *f, const char *name, int64_t fallback) {
  size_t len = strlen(name);
  for (int64_t i = 0; i < f->attrs.size; i++) {
    ByteSpan *span = f->attrs.names[i];
    if (span->len != len || memcmp(span->ptr, name, len) != 0) continue;
    if (f->attrs.types[i] != ATTR_SCALAR) return fallback;
    Scalar *s = (Scalar *)f->attrs.attrs[i];
    switch (s->dtype) {
      case T_PRED: case T_U8: return *(uint8_t *)s->value;
      case T_S8: return *(int8_t *)s->value;
      case T_S32: return *(int32_t *)s->value;
      case T_S64: return *(int64_t *)s->value;
      default: return fallback;
    }
  }
  return fallback;
}

static Buffer *arg(CallFrame *f, int i) { return (Buffer *)f->args.items[i]; }
static Buffer *ret(CallFrame *f, int i) { return (Buffer *)f->rets.items[i]; }

/* The product of the leading `rank - trailing` dimensions. */
static int64_t batch_of(Buffer *b, int trailing) {
  int64_t count = 1;
  for (int64_t i = 0; i < b->rank - trailing; i++) count *= b->dims[i];
  return count;
}

/* Fill `count` elements of kind `kind` (real or complex) with NaN (complex: NaN + 0j, as JAX's
   jnp.full(shape, nan) for a complex dtype). */
static void fill_nan(void *p, int64_t count, int kind, int real_only) {
  int complex_ = kind >= 2 && !real_only;
  int single = kind == 0 || kind == 2;
  for (int64_t i = 0; i < count; i++) {
    if (single) {
      float *x = (float *)p + (complex_ ? 2 * i : i);
      x[0] = NAN;
      if (complex_) x[1] = 0.0f;
    } else {
      double *x = (double *)p + (complex_ ? 2 * i : i);
      x[0] = NAN;
      if (complex_) x[1] = 0.0;
    }
  }
}

/* NaN in every real and imaginary part (what JAX's eig and schur give where LAPACK fails). */
static void fill_nan_all(void *p, int64_t count, int kind) {
  int64_t parts = kind >= 2 ? 2 * count : count;
  for (int64_t i = 0; i < parts; i++) {
    if (kind == 0 || kind == 2) ((float *)p)[i] = NAN;
    else ((double *)p)[i] = NAN;
  }
}

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

/* An (r, c) identity (zeros but ones on the diagonal) of kind `kind`. */
static void fill_eye(void *p, int64_t r, int64_t c, int kind) {
  size_t eb = kind_bytes[kind];
  memset(p, 0, (size_t)(r * c) * eb);
  for (int64_t i = 0; i < r && i < c; i++) {
    char *x = (char *)p + (size_t)(i * r + i) * eb;
    if (kind == 0 || kind == 2) *(float *)x = 1.0f;
    else *(double *)x = 1.0;
  }
}

#define PROLOGUE(nargs, nrets_min)                                                         \
  if (answer_metadata(f) || f->stage != STAGE_EXECUTE) return NULL;                        \
  if (f->args.size != (nargs) || f->rets.size < (nrets_min))                               \
    return error(f, ERR_INVALID_ARGUMENT, "revax LAPACK handler: wrong number of buffers");\
  int kind = kind_of(arg(f, 0)->dtype);                                                    \
  if (kind < 0 || arg(f, 0)->rank < 2)                                                     \
    return error(f, ERR_INVALID_ARGUMENT, "revax LAPACK handler: unsupported operand");

/* ------------------------------------------------------------------------- handlers */

/* eigh: args (a (..., n, n)); rets (v (..., n, n), w (..., n) real); attribute `lower`. */
static void *syevd_handler(CallFrame *f) {
  PROLOGUE(1, 2)
  SyevdFn fn = syevd_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?syevd/?heevd for this dtype");
  Buffer *a = arg(f, 0), *v = ret(f, 0), *w = ret(f, 1);
  int64_t n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  char uplo = int_attr(f, "lower", 1) ? 'L' : 'U';
  size_t mat = (size_t)(n * n) * kind_bytes[kind], vec = (size_t)n * kind_real_bytes[kind];
  for (int64_t b = 0; b < batch; b++) {
    char *vb = (char *)v->data + b * mat, *wb = (char *)w->data + b * vec;
    if (n == 0) continue;
    memcpy(vb, (char *)a->data + b * mat, mat);
    lapack_int info = fn(COL_MAJOR, 'V', uplo, n, vb, max1(n), wb);
    if (info != 0) {
      fill_nan(vb, n * n, kind, 0);
      fill_nan(wb, n, kind, 1);
    }
  }
  return NULL;
}

/* svd: args (a (..., m, n)); rets (s (..., k)) or (s, u (..., m, m|k), vt (..., n|k, n)): the
   count and shapes of the results say which of jobz 'N', 'A', 'S'. */
static void *gesdd_handler(CallFrame *f) {
  PROLOGUE(1, 1)
  GesddFn fn = gesdd_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?gesdd for this dtype");
  Buffer *a = arg(f, 0), *s = ret(f, 0);
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  int64_t k = m < n ? m : n;
  int uv = f->rets.size >= 3;
  Buffer *u = uv ? ret(f, 1) : NULL, *vt = uv ? ret(f, 2) : NULL;
  int64_t ucols = uv ? u->dims[u->rank - 1] : 1, vrows = uv ? vt->dims[vt->rank - 2] : 1;
  char jobz = !uv ? 'N' : (ucols == m && vrows == n) ? 'A' : 'S';
  size_t eb = kind_bytes[kind];
  size_t amat = (size_t)(m * n) * eb, svec = (size_t)k * kind_real_bytes[kind];
  size_t umat = uv ? (size_t)(m * ucols) * eb : 0, vmat = uv ? (size_t)(vrows * n) * eb : 0;
  void *work = malloc(amat ? amat : 1);
  if (!work) return error(f, ERR_INTERNAL, "revax LAPACK: out of memory");
  double dummy[4];
  for (int64_t b = 0; b < batch; b++) {
    char *sb = (char *)s->data + b * svec;
    char *ub = uv ? (char *)u->data + b * umat : (char *)dummy;
    char *vb = uv ? (char *)vt->data + b * vmat : (char *)dummy;
    if (k == 0) {  /* no singular values: full U and V^H are identities (as JAX) */
      if (uv) {
        fill_eye(ub, m, ucols, kind);
        fill_eye(vb, vrows, n, kind);
      }
      continue;
    }
    memcpy(work, (char *)a->data + b * amat, amat);
    lapack_int info = fn(COL_MAJOR, jobz, m, n, work, max1(m), sb, ub, uv ? max1(m) : 1, vb,
                         uv ? max1(vrows) : 1);
    if (info != 0) {
      fill_nan(sb, k, kind, 1);
      if (uv) {
        fill_nan(ub, m * ucols, kind, 0);
        fill_nan(vb, vrows * n, kind, 0);
      }
    }
  }
  free(work);
  return NULL;
}

/* lu: args (a (..., m, n)); rets (lu (..., m, n), pivots (..., k) int32 zero-based,
   permutation (..., m) int32). */
static void *getrf_handler(CallFrame *f) {
  PROLOGUE(1, 3)
  GetrfFn fn = getrf_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?getrf for this dtype");
  Buffer *a = arg(f, 0), *lu = ret(f, 0), *piv = ret(f, 1), *perm = ret(f, 2);
  if (piv->dtype != T_S32 || perm->dtype != T_S32)
    return error(f, ERR_INVALID_ARGUMENT, "revax LAPACK getrf: pivots must be int32");
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  int64_t k = m < n ? m : n;
  size_t mat = (size_t)(m * n) * kind_bytes[kind];
  lapack_int *ipiv = malloc(sizeof(lapack_int) * (size_t)max1(k));
  if (!ipiv) return error(f, ERR_INTERNAL, "revax LAPACK: out of memory");
  for (int64_t b = 0; b < batch; b++) {
    char *lb = (char *)lu->data + b * mat;
    int32_t *pb = (int32_t *)piv->data + b * k, *qb = (int32_t *)perm->data + b * m;
    memcpy(lb, (char *)a->data + b * mat, mat);
    if (k > 0) fn(COL_MAJOR, m, n, lb, max1(m), ipiv);  /* info > 0: singular, still valid */
    for (int64_t i = 0; i < m; i++) qb[i] = (int32_t)i;
    for (int64_t i = 0; i < k; i++) {
      int32_t p = (int32_t)(ipiv[i] - 1);
      pb[i] = p;
      int32_t t = qb[i];
      qb[i] = qb[p];
      qb[p] = t;
    }
  }
  free(ipiv);
  return NULL;
}

/* cholesky: args (a (..., n, n)); rets (l (..., n, n)): the lower factor of the lower triangle
   of a, zeros above the diagonal. Through ?potrf_work, without LAPACKE's NaN check, as jaxlib
   calls LAPACK: a NaN in the input spreads through the factor (OpenBLAS reports no failure for
   it), and a matrix that is not positive definite makes the whole lower triangle NaN. */
static void *potrf_handler(CallFrame *f) {
  PROLOGUE(1, 1)
  PotrfFn fn = potrf_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?potrf for this dtype");
  Buffer *a = arg(f, 0), *l = ret(f, 0);
  int64_t n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  size_t eb = kind_bytes[kind], mat = (size_t)(n * n) * eb;
  for (int64_t b = 0; b < batch; b++) {
    char *lb = (char *)l->data + b * mat;
    if (n == 0) continue;
    memcpy(lb, (char *)a->data + b * mat, mat);
    lapack_int info = fn(COL_MAJOR, 'L', n, lb, n);
    if (info != 0) fill_nan(lb, n * n, kind, 0);  /* the lower triangle, as JAX's */
    for (int64_t j = 1; j < n; j++)  /* column j (column-major): rows 0..j-1 lie above */
      memset(lb + (size_t)(j * n) * eb, 0, (size_t)j * eb);
  }
  return NULL;
}

/* Column j of a real n x n column-major matrix `v` (from ?geev) into column j of the complex
   matrix `out`, imaginary part `im` (a column of v, or NULL for zeros) times `sign`. */
static void complex_column(void *out, const void *v, int64_t n, int64_t j, int64_t jim,
                           double sign, int single) {
  for (int64_t i = 0; i < n; i++) {
    if (single) {
      const float *vv = (const float *)v;
      float *o = (float *)out + 2 * (j * n + i);
      o[0] = vv[j * n + i];
      o[1] = jim < 0 ? 0.0f : (float)(sign * vv[jim * n + i]);
    } else {
      const double *vv = (const double *)v;
      double *o = (double *)out + 2 * (j * n + i);
      o[0] = vv[j * n + i];
      o[1] = jim < 0 ? 0.0 : sign * vv[jim * n + i];
    }
  }
}

/* A real ?geev's eigenvectors (conjugate pairs stored as columns re, im) made complex. */
static void unpack_pairs(void *out, const void *v, const void *wi, int64_t n, int single) {
  for (int64_t j = 0; j < n; j++) {
    double im = single ? ((const float *)wi)[j] : ((const double *)wi)[j];
    if (im != 0.0 && j + 1 < n) {
      complex_column(out, v, n, j, j + 1, 1.0, single);
      complex_column(out, v, n, j + 1, j + 1, -1.0, single);
      /* column j + 1's real part is column j's */
      for (int64_t i = 0; i < n; i++) {
        if (single) ((float *)out)[2 * ((j + 1) * n + i)] = ((const float *)v)[j * n + i];
        else ((double *)out)[2 * ((j + 1) * n + i)] = ((const double *)v)[j * n + i];
      }
      j++;
    } else {
      complex_column(out, v, n, j, -1, 1.0, single);
    }
  }
}

/* eig: args (a (..., n, n)); rets (w (..., n) complex, then vl and vr (..., n, n) complex as
   attributes `left` and `right` ask). Real input: ?geev's (wr, wi) and real vectors are made
   complex (a conjugate pair's columns re, im become re + i im and re - i im). */
static void *geev_handler(CallFrame *f) {
  PROLOGUE(1, 1)
  void *fn = geev_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?geev for this dtype");
  int left = (int)int_attr(f, "left", 0), right = (int)int_attr(f, "right", 0);
  if (f->rets.size != 1 + left + right)
    return error(f, ERR_INVALID_ARGUMENT, "revax LAPACK geev: wrong number of results");
  Buffer *a = arg(f, 0), *w = ret(f, 0);
  Buffer *vl = left ? ret(f, 1) : NULL, *vr = right ? ret(f, 1 + left) : NULL;
  int64_t n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  int real = kind < 2, single = kind == 0 || kind == 2;
  size_t eb = kind_bytes[kind], rb = kind_real_bytes[kind], cb = 2 * rb;
  size_t mat = (size_t)(n * n) * eb, cmat = (size_t)(n * n) * cb;
  char *work = malloc(mat ? mat : 1), *l = malloc(mat ? mat : 1), *r = malloc(mat ? mat : 1);
  char *wr = malloc(n ? (size_t)n * eb : 1), *wi = malloc(n ? (size_t)n * eb : 1);
  if (!work || !l || !r || !wr || !wi) {
    free(work); free(l); free(r); free(wr); free(wi);
    return error(f, ERR_INTERNAL, "revax LAPACK: out of memory");
  }
  for (int64_t b = 0; b < batch && n > 0; b++) {
    char *wb = (char *)w->data + b * (size_t)n * cb;
    char *lb = left ? (char *)vl->data + b * cmat : NULL;
    char *rbp = right ? (char *)vr->data + b * cmat : NULL;
    memcpy(work, (char *)a->data + b * mat, mat);
    char jl = left ? 'V' : 'N', jr = right ? 'V' : 'N';
    lapack_int info;
    if (real) {
      info = ((GeevRealFn)fn)(COL_MAJOR, jl, jr, n, work, n, wr, wi, l, n, r, n);
    } else {
      info = ((GeevComplexFn)fn)(COL_MAJOR, jl, jr, n, work, n, wb, left ? lb : l, n,
                                 right ? rbp : r, n);
    }
    if (info != 0) {
      fill_nan_all(wb, n, kind < 2 ? kind + 2 : kind);
      if (left) fill_nan_all(lb, n * n, kind < 2 ? kind + 2 : kind);
      if (right) fill_nan_all(rbp, n * n, kind < 2 ? kind + 2 : kind);
      continue;
    }
    if (real) {
      for (int64_t j = 0; j < n; j++) {
        if (single) {
          ((float *)wb)[2 * j] = ((float *)wr)[j];
          ((float *)wb)[2 * j + 1] = ((float *)wi)[j];
        } else {
          ((double *)wb)[2 * j] = ((double *)wr)[j];
          ((double *)wb)[2 * j + 1] = ((double *)wi)[j];
        }
      }
      if (left) unpack_pairs(lb, l, wi, n, single);
      if (right) unpack_pairs(rbp, r, wi, n, single);
    }
  }
  free(work); free(l); free(r); free(wr); free(wi);
  return NULL;
}

/* schur: args (a (..., n, n)); rets (t (..., n, n), and q (..., n, n) if attribute `vectors`):
   ?gees without sorting; NaN where it fails. */
static void *gees_handler(CallFrame *f) {
  PROLOGUE(1, 1)
  void *fn = gees_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax LAPACK: no ?gees for this dtype");
  int vectors = (int)int_attr(f, "vectors", 1);
  if (f->rets.size != 1 + vectors)
    return error(f, ERR_INVALID_ARGUMENT, "revax LAPACK gees: wrong number of results");
  Buffer *a = arg(f, 0), *t = ret(f, 0), *q = vectors ? ret(f, 1) : NULL;
  int64_t n = a->dims[a->rank - 1], batch = batch_of(a, 2);
  size_t eb = kind_bytes[kind], mat = (size_t)(n * n) * eb;
  char *qs = malloc(mat ? mat : 1), *w1 = malloc(n ? (size_t)n * eb : 1);
  char *w2 = malloc(n ? (size_t)n * eb : 1);
  if (!qs || !w1 || !w2) {
    free(qs); free(w1); free(w2);
    return error(f, ERR_INTERNAL, "revax LAPACK: out of memory");
  }
  for (int64_t b = 0; b < batch && n > 0; b++) {
    char *tb = (char *)t->data + b * mat, *qb = vectors ? (char *)q->data + b * mat : qs;
    memcpy(tb, (char *)a->data + b * mat, mat);
    lapack_int sdim = 0, info;
    char job = vectors ? 'V' : 'N';
    if (kind < 2) info = ((GeesRealFn)fn)(COL_MAJOR, job, 'N', NULL, n, tb, n, &sdim, w1, w2, qb,
                                          n);
    else info = ((GeesComplexFn)fn)(COL_MAJOR, job, 'N', NULL, n, tb, n, &sdim, w1, qb, n);
    if (info != 0) {
      fill_nan_all(tb, n * n, kind);
      if (vectors) fill_nan_all(qb, n * n, kind);
    }
  }
  free(qs); free(w1); free(w2);
  return NULL;
}

/* One GEMM call's operands and sizes, and the block of C one thread computes: rows m0..m1 or
   (with `by_cols`) columns n0..n1 of every batch member's (m, n) result. */
typedef struct {
  int kind; void *fn; size_t eb; const char *a, *b; char *c;
  int64_t batch, m, n, k; int ta, tb;
  int by_cols; int64_t lo, hi;  /* hi <= lo: the whole of C */
} GemmJob;

/* The block [lo, hi) of rows (or columns) of C for every batch member, on this thread, with
   OpenBLAS kept to one thread: the C block is a sub-matrix with C's leading dimension, and the
   operand it reads is the matching rows of A (columns of B), found by the transposition. */
static void *gemm_block(void *arg) {
  GemmJob *j = (GemmJob *)arg;
  int64_t m = j->m, n = j->n, k = j->k;
  size_t eb = j->eb;
  int64_t lo = j->lo, hi = j->hi;
  if (hi <= lo) { lo = 0; hi = j->by_cols ? n : m; }
  int op_a = j->ta ? TRANS : NO_TRANS, op_b = j->tb ? TRANS : NO_TRANS;
  lapack_int lda = j->ta ? m : k, ldb = j->tb ? k : n;
  static const float one_c[2] = {1.0f, 0.0f}, zero_c[2] = {0.0f, 0.0f};
  static const double one_z[2] = {1.0, 0.0}, zero_z[2] = {0.0, 0.0};
  int saved_threads = set_threads_local ? set_threads_local(1) : -1;
  for (int64_t i = 0; i < j->batch; i++) {
    const char *ai = j->a + (size_t)(i * m * k) * eb, *bi = j->b + (size_t)(i * k * n) * eb;
    char *ci = j->c + (size_t)(i * m * n) * eb;
    int64_t mm = m, nn = n;
    if (j->by_cols) {  /* columns lo..hi of C: columns of B (rows of B^T) */
      bi += (size_t)(j->tb ? lo * k : lo) * eb;
      ci += (size_t)lo * eb;
      nn = hi - lo;
    } else {  /* rows lo..hi of C: rows of A (columns of A^T) */
      ai += (size_t)(j->ta ? lo : lo * k) * eb;
      ci += (size_t)(lo * n) * eb;
      mm = hi - lo;
    }
    switch (j->kind) {
      case 0: ((GemmFloatFn)j->fn)(ROW_MAJOR, op_a, op_b, mm, nn, k, 1.0f, ai, lda, bi, ldb,
                                   0.0f, ci, n); break;
      case 1: ((GemmDoubleFn)j->fn)(ROW_MAJOR, op_a, op_b, mm, nn, k, 1.0, ai, lda, bi, ldb,
                                    0.0, ci, n); break;
      case 2: ((GemmComplexFn)j->fn)(ROW_MAJOR, op_a, op_b, mm, nn, k, one_c, ai, lda, bi, ldb,
                                     zero_c, ci, n); break;
      default: ((GemmComplexFn)j->fn)(ROW_MAJOR, op_a, op_b, mm, nn, k, one_z, ai, lda, bi,
                                      ldb, zero_z, ci, n); break;
    }
  }
  if (saved_threads >= 0) set_threads_local(saved_threads);
  return NULL;
}

/* The GEMM on `threads` threads of revax's own (this one and threads - 1 started for the
   call), each computing a block of C's rows (or columns, when C has more of them) with
   one-thread OpenBLAS: no thread outlives the call, so none spins beside XLA's pool after it
   (OpenBLAS's own threads did: issue 36). A thread that cannot start leaves its block to
   this one. */
static void gemm_split(const GemmJob *job, int threads) {
  GemmJob parts[8];
  pthread_t ids[8];
  int started[8] = {0};
  int by_cols = job->n > job->m;
  int64_t total = by_cols ? job->n : job->m, step = (total + threads - 1) / threads;
  for (int t = 0; t < threads; t++) {
    parts[t] = *job;
    parts[t].by_cols = by_cols;
    parts[t].lo = t * step < total ? t * step : total;
    parts[t].hi = (t + 1) * step < total ? (t + 1) * step : total;
  }
  for (int t = 1; t < threads; t++)
    if (parts[t].hi > parts[t].lo)
      started[t] = pthread_create(&ids[t], NULL, gemm_block, &parts[t]) == 0;
  if (parts[0].hi > parts[0].lo) gemm_block(&parts[0]);
  for (int t = 1; t < threads; t++) {
    if (started[t]) pthread_join(ids[t], NULL);
    else if (parts[t].hi > parts[t].lo) gemm_block(&parts[t]);
  }
}

/* dot_general as a batch of GEMMs: args (a, b), ret (c). The custom call asks XLA for layouts
   that make a (batch, m, k) or, with `trans_a`, (batch, k, m) row-major in memory, b (batch, k,
   n) or, with `trans_b`, (batch, n, k), and c (batch, m, n): the attributes `batch`, `m`, `n`,
   `k` are those products of dimensions (the lowering merges each group of dimensions). */
static void *gemm_handler(CallFrame *f) {
  if (answer_metadata(f) || f->stage != STAGE_EXECUTE) return NULL;
  if (f->args.size != 2 || f->rets.size != 1)
    return error(f, ERR_INVALID_ARGUMENT, "revax GEMM handler: wrong number of buffers");
  int kind = kind_of(arg(f, 0)->dtype);
  if (kind < 0 || arg(f, 1)->dtype != arg(f, 0)->dtype || ret(f, 0)->dtype != arg(f, 0)->dtype)
    return error(f, ERR_INVALID_ARGUMENT, "revax GEMM handler: unsupported operands");
  void *fn = gemm_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax GEMM: no ?gemm for this dtype");
  int64_t batch = int_attr(f, "batch", -1), m = int_attr(f, "m", -1), n = int_attr(f, "n", -1),
          k = int_attr(f, "k", -1);
  int ta = (int)int_attr(f, "trans_a", 0), tb = (int)int_attr(f, "trans_b", 0);
  if (batch < 0 || m < 0 || n < 0 || k < 0)
    return error(f, ERR_INVALID_ARGUMENT, "revax GEMM handler: missing size attributes");
  char *a = (char *)arg(f, 0)->data, *b = (char *)arg(f, 1)->data, *c = (char *)ret(f, 0)->data;
  size_t eb = kind_bytes[kind];
  if (m == 0 || n == 0 || batch == 0) return NULL;
  if (k == 0) {
    memset(c, 0, (size_t)(batch * m * n) * eb);
    return NULL;
  }
  int threads = (int)int_attr(f, "threads", 1);
  GemmJob job = {kind, fn, eb, a, b, c, batch, m, n, k, ta, tb, 0, 0, 0};
  if (threads > 1 && (m >= 2 * threads || n >= 2 * threads))
    gemm_split(&job, threads > 8 ? 8 : threads);
  else
    gemm_block(&job);
  return NULL;
}

enum { CONV_DIMS = 3 };

/* What conv_handler's workers share: operands, sizes (3 spatial dims), the index tables. */
typedef struct {
  int kind; void *fn; size_t eb; const char *x, *w; char *y;
  int64_t n, c, o, groups, cg, og, kc, in[3], win[3], out[3];
  int64_t group_offset;  /* elements of x between one group's input and the next's */
  int64_t *tab[3];
  int64_t nlines, per_chunk; int workers;
} ConvJob;
typedef struct { ConvJob *job; int index; int failed; } ConvWork;

/* Convolutions of at least this many flops run on two threads (conv_handler). */
#define CONV_THREAD_FLOPS 4.0e6
static long conv_threads = 0;  /* online CPUs (at most 2 used), read when the module loads */

/* One worker of conv_handler: the chunks index, index + workers, ... of the job. */
static void *conv_worker(void *arg) {
  ConvWork *self = (ConvWork *)arg;
  ConvJob *job = self->job;
  int kind = job->kind;
  void *fn = job->fn;
  size_t eb = job->eb;
  const char *x = job->x, *w = job->w;
  char *y = job->y;
  int64_t c = job->c, o = job->o, groups = job->groups, cg = job->cg, og = job->og,
          kc = job->kc;
  const int64_t *in = job->in, *win = job->win, *out = job->out;
  int64_t *const *tab = job->tab;
  int64_t nlines = job->nlines, per_chunk = job->per_chunk;
  int64_t chunk = per_chunk * out[2];
  char *scratch = malloc((size_t)(chunk * kc * groups) * eb);
  if (!scratch) {
    self->failed = 1;
    return NULL;
  }
  static const float one_c[2] = {1.0f, 0.0f}, zero_c[2] = {0.0f, 0.0f};
  static const double one_z[2] = {1.0, 0.0}, zero_z[2] = {0.0, 0.0};
  int saved_threads = set_threads_local ? set_threads_local(1) : -1;  /* as gemm_handler */
  size_t cg_bytes = (size_t)cg * eb, plane = (size_t)(chunk * kc) * eb;
  size_t row_bytes = (size_t)kc * eb;
  for (int64_t l0 = self->index * per_chunk; l0 < nlines;
       l0 += job->workers * per_chunk) {
    int64_t nl = nlines - l0 < per_chunk ? nlines - l0 : per_chunk, m = nl * out[2];
    int64_t r0 = l0 * out[2];
    /* The patches of these rows for every group: group g's (m, kc) matrix at scratch + g *
       plane; its column (k0, k1, k2, channel) holds what each row reads at that window
       position. */
    for (int64_t l = 0; l < nl; l++) {
      int64_t rest = l0 + l;
      int64_t q1 = rest % out[1]; rest /= out[1];
      int64_t q0 = rest % out[0], b = rest / out[0];
      char *line = scratch + (size_t)(l * out[2]) * row_bytes;
      for (int64_t k0 = 0; k0 < win[0]; k0++) {
        int64_t i0 = tab[0][q0 * win[0] + k0];
        for (int64_t k1 = 0; k1 < win[1]; k1++) {
          int64_t i1 = tab[1][q1 * win[1] + k1];
          for (int64_t k2 = 0; k2 < win[2]; k2++) {
            size_t col = (size_t)(((k0 * win[1] + k1) * win[2] + k2) * cg) * eb;
            if (i0 < 0 || i1 < 0) {
              for (int64_t g = 0; g < groups; g++)
                for (int64_t q2 = 0; q2 < out[2]; q2++)
                  memset(line + g * plane + q2 * row_bytes + col, 0, cg_bytes);
              continue;
            }
            const char *src = x + (size_t)(((b * in[0] + i0) * in[1] + i1) * in[2] * c) * eb;
            const int64_t *t2 = tab[2] + k2;
            for (int64_t g = 0; g < groups; g++) {
              char *dst = line + g * plane + col;
              const char *sg = src + (size_t)(g * job->group_offset) * eb;
              if (cg == 1 && eb == 4) {
                float *d = (float *)dst;
                const float *s = (const float *)sg;
                for (int64_t q2 = 0; q2 < out[2]; q2++) {
                  int64_t i2 = t2[q2 * win[2]];
                  d[q2 * kc] = i2 < 0 ? 0.0f : s[i2 * c];
                }
              } else if (cg == 1 && eb == 8) {
                double *d = (double *)dst;
                const double *s = (const double *)sg;
                for (int64_t q2 = 0; q2 < out[2]; q2++) {
                  int64_t i2 = t2[q2 * win[2]];
                  d[q2 * kc] = i2 < 0 ? 0.0 : s[i2 * c];
                }
              } else {
                for (int64_t q2 = 0; q2 < out[2]; q2++) {
                  int64_t i2 = t2[q2 * win[2]];
                  if (i2 < 0) memset(dst + q2 * row_bytes, 0, cg_bytes);
                  else memcpy(dst + q2 * row_bytes, sg + (size_t)(i2 * c) * eb, cg_bytes);
                }
              }
            }
          }
        }
      }
    }
    for (int64_t g = 0; g < groups; g++) {
      const char *a = scratch + g * plane, *wg = w + (size_t)(g * og) * eb;
      char *yc = y + (size_t)(r0 * o + g * og) * eb;
      switch (kind) {
        case 0: ((GemmFloatFn)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, m, og, kc, 1.0f, a, kc, wg, o,
                                  0.0f, yc, o); break;
        case 1: ((GemmDoubleFn)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, m, og, kc, 1.0, a, kc, wg, o,
                                   0.0, yc, o); break;
        case 2: ((GemmComplexFn)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, m, og, kc, one_c, a, kc, wg,
                                    o, zero_c, yc, o); break;
        default: ((GemmComplexFn)fn)(ROW_MAJOR, NO_TRANS, NO_TRANS, m, og, kc, one_z, a, kc, wg,
                                     o, zero_z, yc, o); break;
      }
    }
  }
  if (saved_threads >= 0) set_threads_local(saved_threads);
  free(scratch);
  return NULL;
}

/* ---- Non-finite filters and inputs as jax's XLA:CPU has them (conv_nonfinite.py has the rule).
   The patches' zeros (padding, lhs-dilation holes) always meet the filter, so a NaN or inf there
   reaches every output of its feature (mode "A", Eigen's and YNNPACK's convolutions). Where XLA
   runs an algorithm that leaves them out (mode "B", attribute skip_pad), the outputs whose window
   touches padding are summed again over the taps that read the input. Batch groups whose XLA
   rewrite meets other groups' filters at holes (spread 1) and float64 depthwise convolutions whose
   XLA rewrite multiplies every input channel by zeros (spread 2) get those NaNs. All of it runs
   only when the filter (or, for spread 2, the input) holds a NaN or inf: one pass over it. */
typedef struct {
  int kind; const char *x, *w; char *y;
  int64_t n, c, o, groups, cg, og, in[3], win[3], out[3], group_offset;
  int64_t *const *tab;
} ConvFix;

static int conv_nonfinite(const char *p, int64_t reals, int dbl) {
  if (dbl) {
    const double *d = (const double *)p;
    for (int64_t i = 0; i < reals; i++) if (!isfinite(d[i])) return 1;
  } else {
    const float *d = (const float *)p;
    for (int64_t i = 0; i < reals; i++) if (!isfinite(d[i])) return 1;
  }
  return 0;
}

/* y[row * o + col] = NaN (both parts of a complex element). */
static void conv_put_nan(const ConvFix *j, int64_t at) {
  switch (j->kind) {
    case 0: ((float *)j->y)[at] = NAN; break;
    case 1: ((double *)j->y)[at] = NAN; break;
    case 2: ((float *)j->y)[2 * at] = ((float *)j->y)[2 * at + 1] = NAN; break;
    default: ((double *)j->y)[2 * at] = ((double *)j->y)[2 * at + 1] = NAN; break;
  }
}

/* Output (b, q0, q1, q2)'s column g * og + jj summed over the taps that read the input, in the
   element type (products as XLA forms them: complex ones without C99's NaN recovery).
   CONV_TAPS runs its body (the arguments) for each tap that reads the input, with `xo` the
   element offset of its group's input channels and `wo` that of the filter's column there. */
#define CONV_TAPS(...)                                                                      \
  for (int64_t k0 = 0; k0 < j->win[0]; k0++) {                                              \
    int64_t i0 = j->tab[0][q0 * j->win[0] + k0];                                            \
    if (i0 < 0) continue;                                                                   \
    for (int64_t k1 = 0; k1 < j->win[1]; k1++) {                                            \
      int64_t i1 = j->tab[1][q1 * j->win[1] + k1];                                          \
      if (i1 < 0) continue;                                                                 \
      for (int64_t k2 = 0; k2 < j->win[2]; k2++) {                                          \
        int64_t i2 = j->tab[2][q2 * j->win[2] + k2];                                        \
        if (i2 < 0) continue;                                                               \
        int64_t xo = (((b * j->in[0] + i0) * j->in[1] + i1) * j->in[2] + i2) * j->c         \
                     + g * j->group_offset;                                                 \
        int64_t wo = ((k0 * j->win[1] + k1) * j->win[2] + k2) * j->cg * j->o + g * j->og    \
                     + jj;                                                                  \
        __VA_ARGS__                                                                         \
      }                                                                                     \
    }                                                                                       \
  }
#define CONV_DIRECT_REAL(T)                                                                 \
  {                                                                                         \
    const T *x = (const T *)j->x, *w = (const T *)j->w;                                     \
    T acc = 0;                                                                              \
    CONV_TAPS(for (int64_t ci = 0; ci < j->cg; ci++) acc += x[xo + ci] * w[wo + ci * j->o];) \
    ((T *)j->y)[at] = acc;                                                                  \
  }
#define CONV_DIRECT_COMPLEX(T)                                                              \
  {                                                                                         \
    const T *x = (const T *)j->x, *w = (const T *)j->w;                                     \
    T re = 0, im = 0;                                                                       \
    CONV_TAPS(for (int64_t ci = 0; ci < j->cg; ci++) {                                      \
      T a = x[2 * (xo + ci)], bi = x[2 * (xo + ci) + 1], c = w[2 * (wo + ci * j->o)],       \
        d = w[2 * (wo + ci * j->o) + 1];                                                    \
      re += a * c - bi * d;                                                                 \
      im += a * d + bi * c;                                                                 \
    })                                                                                      \
    ((T *)j->y)[2 * at] = re;                                                               \
    ((T *)j->y)[2 * at + 1] = im;                                                           \
  }

static void conv_direct(const ConvFix *j, int64_t b, int64_t q0, int64_t q1, int64_t q2,
                        int64_t g, int64_t jj, int64_t at) {
  switch (j->kind) {
    case 0: CONV_DIRECT_REAL(float) break;
    case 1: CONV_DIRECT_REAL(double) break;
    case 2: CONV_DIRECT_COMPLEX(float) break;
    default: CONV_DIRECT_COMPLEX(double) break;
  }
}

/* The fix-ups; 0, or -1 when out of memory. */
static int conv_fix_nonfinite(const ConvFix *j, int skip_pad, int spread) {
  int dbl = j->kind == 1 || j->kind == 3, cplx = j->kind >= 2;
  int64_t window = j->win[0] * j->win[1] * j->win[2];
  int64_t w_reals = window * j->cg * j->o * (cplx ? 2 : 1);
  int wbad = (skip_pad || spread == 1) && conv_nonfinite(j->w, w_reals, dbl);
  int64_t x_elems = j->n * j->in[0] * j->in[1] * j->in[2] * j->c;  /* (no batch groups) */
  int xbad = spread == 2 && conv_nonfinite(j->x, x_elems * (cplx ? 2 : 1), dbl);
  if (!wbad && !xbad) return 0;
  size_t eb = kind_bytes[j->kind];
  int64_t o = j->o;
  if (wbad && skip_pad) {
    char *edge[3];  /* edge[d][q]: output index q along d reads padding or a hole somewhere */
    for (int d = 0; d < 3; d++) {
      edge[d] = calloc((size_t)max1(j->out[d]), 1);
      if (!edge[d]) {
        for (int e = 0; e < d; e++) free(edge[e]);
        return -1;
      }
      for (int64_t q = 0; q < j->out[d]; q++)
        for (int64_t k = 0; k < j->win[d]; k++) edge[d][q] |= j->tab[d][q * j->win[d] + k] < 0;
    }
    for (int64_t b = 0; b < j->n; b++)
      for (int64_t q0 = 0; q0 < j->out[0]; q0++)
        for (int64_t q1 = 0; q1 < j->out[1]; q1++)
          for (int64_t q2 = 0; q2 < j->out[2]; q2++) {
            if (!(edge[0][q0] || edge[1][q1] || edge[2][q2])) continue;
            int64_t row = ((b * j->out[0] + q0) * j->out[1] + q1) * j->out[2] + q2;
            for (int64_t g = 0; g < j->groups; g++)
              for (int64_t jj = 0; jj < j->og; jj++)
                conv_direct(j, b, q0, q1, q2, g, jj, row * o + g * j->og + jj);
          }
    for (int d = 0; d < 3; d++) free(edge[d]);
  }
  int64_t rows = j->n * j->out[0] * j->out[1] * j->out[2];
  if (wbad && spread == 1) {
    /* bad[k * og + jj]: batch group k's filter jj holds a NaN or inf; it reaches column jj of
       every other group. */
    char *bad = calloc((size_t)max1(o), 1);
    if (!bad) return -1;
    int64_t per = cplx ? 2 : 1;
    for (int64_t r = 0; r < window * j->cg; r++)
      for (int64_t col = 0; col < o; col++)
        if (!bad[col])
          bad[col] = conv_nonfinite(j->w + (size_t)(r * o + col) * eb, per, dbl);
    for (int64_t q = 0; q < j->groups; q++)
      for (int64_t jj = 0; jj < j->og; jj++) {
        int hit = 0;
        for (int64_t k = 0; k < j->groups && !hit; k++) hit = k != q && bad[k * j->og + jj];
        if (hit)
          for (int64_t row = 0; row < rows; row++) conv_put_nan(j, row * o + q * j->og + jj);
      }
    free(bad);
  }
  if (xbad) {
    /* Depthwise (cg == 1): a NaN or inf in input channel cc reaches the columns of every other
       group at the outputs whose window reads it. */
    int64_t per = cplx ? 2 : 1;
    for (int64_t b = 0; b < j->n; b++)
      for (int64_t q0 = 0; q0 < j->out[0]; q0++)
        for (int64_t q1 = 0; q1 < j->out[1]; q1++)
          for (int64_t q2 = 0; q2 < j->out[2]; q2++) {
            int64_t row = ((b * j->out[0] + q0) * j->out[1] + q1) * j->out[2] + q2;
            for (int64_t k0 = 0; k0 < j->win[0]; k0++) {
              int64_t i0 = j->tab[0][q0 * j->win[0] + k0];
              for (int64_t k1 = 0; i0 >= 0 && k1 < j->win[1]; k1++) {
                int64_t i1 = j->tab[1][q1 * j->win[1] + k1];
                for (int64_t k2 = 0; i1 >= 0 && k2 < j->win[2]; k2++) {
                  int64_t i2 = j->tab[2][q2 * j->win[2] + k2];
                  if (i2 < 0) continue;
                  const char *s = j->x + (size_t)((((b * j->in[0] + i0) * j->in[1] + i1)
                                                   * j->in[2] + i2) * j->c) * eb;
                  for (int64_t cc = 0; cc < j->c; cc++) {
                    if (!conv_nonfinite(s + (size_t)cc * eb, per, dbl)) continue;
                    for (int64_t col = 0; col < o; col++)
                      if (col / j->og != cc) conv_put_nan(j, row * o + col);
                  }
                }
              }
            }
          }
  }
  return 0;
}

/* convolution as GEMMs of image patches (im2col): args (x (n, i0, i1, i2, c), w (k0, k1, k2,
   c / groups, o)), ret (y (n, q0, q1, q2, o)), all row-major: channels last, as revax lowers
   every convolution (NHWC x HWIO -> NHWC); a convolution of fewer spatial dimensions has size-1
   ones before its own. Attributes: `n`, `c`, `o`, `groups` (feature_group_count),
   `batch_groups` (batch_group_count, default 1; not both above 1), and for each
   spatial dimension d < 3: `in<d>`, `win<d>`, `out<d>` (sizes), `stride<d>`, `pad<d>` (the low
   padding, possibly negative), `ldil<d>`, `rdil<d>` (lhs and rhs dilation), `rev<d>` (window
   reversal); `threads` (default 1; 2 shares large work with a second thread). For each group,
   chunks of output positions (rows) get their patches copied into a
   scratch matrix (row: output position; columns: window position, then the group's input
   channels; zero where the window reads padding or a hole of the lhs dilation), which one GEMM
   multiplies by the group's (window * c / groups, o / groups) block of w into y's columns. */
static void *conv_handler(CallFrame *f) {
  if (answer_metadata(f) || f->stage != STAGE_EXECUTE) return NULL;
  if (f->args.size != 2 || f->rets.size != 1)
    return error(f, ERR_INVALID_ARGUMENT, "revax conv handler: wrong number of buffers");
  int kind = kind_of(arg(f, 0)->dtype);
  if (kind < 0 || arg(f, 1)->dtype != arg(f, 0)->dtype || ret(f, 0)->dtype != arg(f, 0)->dtype)
    return error(f, ERR_INVALID_ARGUMENT, "revax conv handler: unsupported operands");
  void *fn = gemm_fns[kind];
  if (!fn) return error(f, ERR_INTERNAL, "revax conv: no ?gemm for this dtype");
  int64_t n = int_attr(f, "n", -1), c = int_attr(f, "c", -1), o = int_attr(f, "o", -1),
          groups = int_attr(f, "groups", -1), batch_groups = int_attr(f, "batch_groups", 1);
  int64_t in[CONV_DIMS], win[CONV_DIMS], out[CONV_DIMS], stride[CONV_DIMS], pad[CONV_DIMS],
          ldil[CONV_DIMS], rdil[CONV_DIMS], rev[CONV_DIMS];
  static const char *names[8][CONV_DIMS] = {
      {"in0", "in1", "in2"}, {"win0", "win1", "win2"}, {"out0", "out1", "out2"},
      {"stride0", "stride1", "stride2"}, {"pad0", "pad1", "pad2"}, {"ldil0", "ldil1", "ldil2"},
      {"rdil0", "rdil1", "rdil2"}, {"rev0", "rev1", "rev2"}};
  int64_t *fields[8] = {in, win, out, stride, pad, ldil, rdil, rev};
  static const int64_t defaults[8] = {1, 1, 1, 1, 0, 1, 1, 0};
  for (int a = 0; a < 8; a++)
    for (int d = 0; d < CONV_DIMS; d++) fields[a][d] = int_attr(f, names[a][d], defaults[a]);
  int bad = n < 0 || c < 0 || o < 0 || groups < 1 || c % groups || o % groups
            || batch_groups < 1 || (batch_groups > 1 && groups > 1) || n % batch_groups
            || o % batch_groups;
  for (int d = 0; d < CONV_DIMS; d++)
    bad |= in[d] < 0 || win[d] < 0 || out[d] < 0 || stride[d] < 1 || ldil[d] < 1 || rdil[d] < 1;
  if (bad) return error(f, ERR_INVALID_ARGUMENT, "revax conv handler: bad size attributes");
  int64_t cg = c / groups;
  /* Batch groups: group g convolves the g-th n / batch_groups lhs batch elements (all c
     channels) with the g-th o / batch_groups filters; handled as groups whose inputs lie that
     many batch elements apart instead of cg channels apart. */
  int64_t group_offset = cg;
  if (batch_groups > 1) {
    n /= batch_groups;
    groups = batch_groups;
    group_offset = n * in[0] * in[1] * in[2] * c;
  }
  int64_t og = o / groups;
  int64_t window = win[0] * win[1] * win[2], kc = window * cg;
  int64_t rows = n * out[0] * out[1] * out[2];
  /* The buffers must hold what the attributes say (a mismatch would read out of bounds). */
  if (batch_of(arg(f, 0), 0) != n * batch_groups * in[0] * in[1] * in[2] * c
      || batch_of(arg(f, 1), 0) != kc * o || batch_of(ret(f, 0), 0) != rows * o)
    return error(f, ERR_INVALID_ARGUMENT, "revax conv handler: buffer sizes differ from the "
                                          "size attributes");
  size_t eb = kind_bytes[kind];
  char *x = (char *)arg(f, 0)->data, *w = (char *)arg(f, 1)->data, *y = (char *)ret(f, 0)->data;
  if (rows == 0 || og == 0) return NULL;
  if (kc == 0) {
    memset(y, 0, (size_t)(rows * o) * eb);
    return NULL;
  }
  /* tab[d][q * win[d] + k]: the input index that output index q reads at window index k along
     spatial dimension d, or -1 (padding or a hole of the lhs dilation). */
  ConvJob job = {kind, fn, eb, x, w, y, n, c, o, groups, cg, og, kc, {0}, {0}, {0},
                 group_offset, {NULL, NULL, NULL}, 0, 0, 0};
  for (int d = 0; d < CONV_DIMS; d++) {
    job.in[d] = in[d];
    job.win[d] = win[d];
    job.out[d] = out[d];
  }
  /* Rows are taken in lines (the output positions along the last spatial dimension, of one
     batch element and one position along the others); lines per chunk: the groups' scratch
     matrices together hold about 2^17 elements (they stay in the caches), at least 1 line. */
  job.nlines = n * out[0] * out[1];
  job.per_chunk = (1 << 17) / (kc * groups * max1(out[2]));
  if (job.per_chunk < 1) job.per_chunk = 1;
  if (job.per_chunk > job.nlines) job.per_chunk = job.nlines;
  int ok = 1;
  for (int d = 0; d < CONV_DIMS && ok; d++) {
    job.tab[d] = malloc((size_t)max1(out[d] * win[d]) * sizeof(int64_t));
    ok = job.tab[d] != NULL;
    for (int64_t q = 0; ok && q < out[d]; q++) {
      for (int64_t k = 0; k < win[d]; k++) {
        int64_t kk = rev[d] ? win[d] - 1 - k : k;
        int64_t pos = q * stride[d] + kk * rdil[d] - pad[d];  /* in the dilated, padded lhs */
        int64_t valid = pos >= 0 && pos % ldil[d] == 0 && pos / ldil[d] < in[d];
        job.tab[d][q * win[d] + k] = valid ? pos / ldil[d] : -1;
      }
    }
  }
  /* With `threads` 2, two workers (this thread and one more) share the chunks, alternately,
     where the work is large enough to pay for starting a thread (2 * rows * kc * o flops >=
     CONV_THREAD_FLOPS) and the machine has two cores. Not by default: on the 2 shared cores
     measured (load average 6-8) two threads took 1.06-1.23x one thread's time (issue 36). */
  int64_t chunks = (job.nlines + job.per_chunk - 1) / job.per_chunk;
  int workers = 1;
  if (ok && chunks > 1 && conv_threads > 1 && int_attr(f, "threads", 1) > 1
      && 2.0 * (double)rows * (double)kc * (double)o >= CONV_THREAD_FLOPS)
    workers = 2;
  job.workers = workers;
  ConvWork work[2] = {{&job, 0, 0}, {&job, 1, 0}};
  pthread_t helper;
  int started = 0;
  if (ok && workers == 2) started = pthread_create(&helper, NULL, conv_worker, &work[1]) == 0;
  if (ok) {
    conv_worker(&work[0]);
    if (workers == 2 && !started) conv_worker(&work[1]);  /* no thread: do its share here */
    if (started) pthread_join(helper, NULL);
  }
  if (ok && !work[0].failed && !(workers == 2 && work[1].failed)) {
    ConvFix fix = {kind, x, w, y, n, c, o, groups, cg, og, {in[0], in[1], in[2]},
                   {win[0], win[1], win[2]}, {out[0], out[1], out[2]}, group_offset, job.tab};
    ok = conv_fix_nonfinite(&fix, (int)int_attr(f, "skip_pad", 0),
                            (int)int_attr(f, "spread", 0)) == 0;
  }
  for (int d = 0; d < CONV_DIMS; d++) free(job.tab[d]);
  if (!ok || work[0].failed || (workers == 2 && work[1].failed))
    return error(f, ERR_INTERNAL, "revax conv handler: out of memory");
  return NULL;
}

/* ------------------------------------------------------------------------- Python module */

static PyObject *set_lapack(PyObject *self, PyObject *table) {
  (void)self;
  PyObject *seq = PySequence_Fast(table, "set_lapack takes a sequence of 24 addresses");
  if (!seq) return NULL;
  if (PySequence_Fast_GET_SIZE(seq) != 24) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "set_lapack takes 24 addresses: ?syevd/?heevd, ?gesdd, "
                                      "?getrf_work, ?potrf_work, ?geev, ?gees, each for s, d, "
                                      "c, z");
    return NULL;
  }
  void *addresses[24];
  for (int i = 0; i < 24; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    addresses[i] = item == Py_None ? NULL : PyLong_AsVoidPtr(item);
    if (PyErr_Occurred()) {
      Py_DECREF(seq);
      return NULL;
    }
  }
  Py_DECREF(seq);
  for (int i = 0; i < 4; i++) {
    syevd_fns[i] = (SyevdFn)addresses[i];
    gesdd_fns[i] = (GesddFn)addresses[4 + i];
    getrf_fns[i] = (GetrfFn)addresses[8 + i];
    potrf_fns[i] = (PotrfFn)addresses[12 + i];
    geev_fns[i] = addresses[16 + i];
    gees_fns[i] = addresses[20 + i];
  }
  Py_RETURN_NONE;
}

static PyObject *set_blas(PyObject *self, PyObject *table) {
  (void)self;
  PyObject *seq = PySequence_Fast(table, "set_blas takes a sequence of 5 addresses");
  if (!seq) return NULL;
  if (PySequence_Fast_GET_SIZE(seq) != 5) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "set_blas takes 5 addresses: cblas ?gemm for s, d, c, z "
                                      "and openblas_set_num_threads_local");
    return NULL;
  }
  void *addresses[5];
  for (int i = 0; i < 5; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    addresses[i] = item == Py_None ? NULL : PyLong_AsVoidPtr(item);
    if (PyErr_Occurred()) {
      Py_DECREF(seq);
      return NULL;
    }
  }
  Py_DECREF(seq);
  for (int i = 0; i < 4; i++) gemm_fns[i] = addresses[i];
  set_threads_local = (SetThreadsLocalFn)addresses[4];
  Py_RETURN_NONE;
}

static PyObject *handlers(PyObject *self, PyObject *unused) {
  (void)self; (void)unused;
  return Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
                       "syevd", PyLong_FromVoidPtr((void *)syevd_handler),
                       "gesdd", PyLong_FromVoidPtr((void *)gesdd_handler),
                       "getrf", PyLong_FromVoidPtr((void *)getrf_handler),
                       "potrf", PyLong_FromVoidPtr((void *)potrf_handler),
                       "geev", PyLong_FromVoidPtr((void *)geev_handler),
                       "gees", PyLong_FromVoidPtr((void *)gees_handler),
                       "gemm", PyLong_FromVoidPtr((void *)gemm_handler),
                       "conv", PyLong_FromVoidPtr((void *)conv_handler));
}

static PyMethodDef methods[] = {
  {"set_lapack", set_lapack, METH_O,
   "set_lapack(addresses): the 24 LAPACKE functions (None where missing), in the order "
   "ssyevd dsyevd cheevd zheevd, sgesdd dgesdd cgesdd zgesdd, sgetrf_work dgetrf_work "
   "cgetrf_work zgetrf_work, spotrf_work dpotrf_work cpotrf_work zpotrf_work, sgeev dgeev "
   "cgeev zgeev, sgees dgees cgees zgees."},
  {"set_blas", set_blas, METH_O,
   "set_blas(addresses): the 4 CBLAS functions (None where missing), in the order "
   "cblas_sgemm cblas_dgemm cblas_cgemm cblas_zgemm (ILP64)."},
  {"handlers", handlers, METH_NOARGS,
   "handlers() -> {'syevd': address, ..., 'potrf': address} of the FFI handlers."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
  PyModuleDef_HEAD_INIT, "_lapack", "XLA FFI handlers calling LAPACK (see _lapack.c).", -1,
  methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lapack(void) {
  conv_threads = sysconf(_SC_NPROCESSORS_ONLN);
  return PyModule_Create(&module);
}
