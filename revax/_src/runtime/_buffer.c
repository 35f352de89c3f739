/* The buffer protocol of revax's Array: a base class whose only content is `bf_getbuffer`.

   Python 3.11 classes cannot export buffers from Python code (`__buffer__` is 3.12's PEP 688),
   so Array derives from `BufferBase`, defined here with no fields of its own. Asking an Array
   for its buffer calls its `_buffer_export()` method, which returns a read-only C-contiguous
   NumPy array of its value (or raises BufferError), and forwards the request to that array:
   the view keeps the NumPy array alive, and a writable request fails as on any read-only
   buffer -- the same read-only buffer that jax's Arrays export, with jax's format codes.

   Optional like _fastpath.c: where it is not built, Array derives from a plain Python class
   and memoryview(x) raises TypeError (runtime/array.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* NumPy's native format codes -> the standard-size codes jax's buffers report ("=f", ...; a
   64-bit integer is "=q" where NumPy says "l"). */
static const char *const FORMATS[][2] = {
    {"f", "=f"}, {"d", "=d"}, {"e", "=e"}, {"Zf", "=Zf"}, {"Zd", "=Zd"},
    {"b", "=b"}, {"B", "=B"}, {"h", "=h"}, {"H", "=H"}, {"i", "=i"}, {"I", "=I"},
    {"l", "=q"}, {"L", "=Q"}, {"q", "=q"}, {"Q", "=Q"}, {"?", "?"},
};

static void standard_format(Py_buffer *view) {
  if (view->format == NULL) return;
  for (size_t i = 0; i < sizeof(FORMATS) / sizeof(FORMATS[0]); i++) {
    if (strcmp(view->format, FORMATS[i][0]) == 0) {
      view->format = (char *)FORMATS[i][1];
      return;
    }
  }
}

static int base_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  if (flags & PyBUF_WRITABLE) {
    view->obj = NULL;
    PyErr_SetString(PyExc_BufferError, "revax Arrays are immutable: their buffer is read-only");
    return -1;
  }
  PyObject *npy = PyObject_CallMethod(self, "_buffer_export", NULL);
  if (npy == NULL) {
    view->obj = NULL;
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      /* NumPy's np.asarray asks for the buffer first and clears any error it gets (then calls
         __array__): an interrupt raised while waiting for the value would be lost. Deliver it
         again at the next check, and fail this request with a BufferError. */
      PyErr_Clear();
      PyErr_SetInterrupt();
      PyErr_SetString(PyExc_BufferError, "interrupted while reading the Array's value");
    }
    return -1;
  }
  int status = PyObject_GetBuffer(npy, view, flags);
  Py_DECREF(npy);
  if (status == 0) standard_format(view);
  return status;
}

static PyBufferProcs base_as_buffer = {
    .bf_getbuffer = base_getbuffer,
    .bf_releasebuffer = NULL,
};

static PyTypeObject BufferBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "revax._src.runtime._buffer.BufferBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Base of revax's Array: exports its value through the buffer protocol, read-only.",
    .tp_as_buffer = &base_as_buffer,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_buffer", "The buffer protocol of revax's Array.", -1, NULL,
};

PyMODINIT_FUNC PyInit__buffer(void) {
  if (PyType_Ready(&BufferBaseType) < 0) return NULL;
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  Py_INCREF(&BufferBaseType);
  if (PyModule_AddObject(module, "BufferBase", (PyObject *)&BufferBaseType) < 0) {
    Py_DECREF(&BufferBaseType);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
