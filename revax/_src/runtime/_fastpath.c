/* revax's compiled call path: run a loaded PJRT executable and wrap its outputs without ctypes.

   Optional: setup.py builds it where a C compiler is present, and revax runs the same steps
   through ctypes where it is not (runtime/fastpath.py decides; REVAX_FASTPATH=0 turns it off).

   It knows nothing of PJRT's struct layouts: Python (pjrt.py, the one place that knows them)
   hands over a filled-in template of each Args struct and the offsets of the fields a call
   changes. Every call copies its template onto the C stack, so concurrent calls share nothing
   and no pool or lock is needed. The GIL is released around each plugin call, as ctypes does,
   so host callbacks (which take the GIL on XLA's threads) keep working.

   Objects:
   - Runner: one per loaded executable. `run(pointers, device)` executes on a list of
     PJRT_Buffer pointers and returns the output pointers; `call(args)` is jit's whole repeated
     call once its plan is attached (`set_plan`): check each argument against the plan (exact
     Array type, the same aval, a live buffer), execute, and return the outputs as new Arrays.
     `set_sharded_plan` / `call_sharded(leaves, launch_id)` do the same for a jit signature over
     a mesh: ShardedArray arguments, one launch on every device, queued without waiting, the
     outputs new ShardedArrays (sharded_jit.py's ShardedPlan).
   - Freer: one per backend; `free(pointer)` is PJRT_Buffer_Destroy (a Buffer's finalizer).
   Slot offsets of revax's Array and Buffer classes are read once from their member
   descriptors (`configure`), so reading `x._buf._ptr` or making an output Array is a few loads
   and stores rather than attribute lookups. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define FASTPATH_ABI 6
#define TEMPLATE_MAX 256
#define STACK_BUFFERS 64

typedef void *(*pjrt_fn)(void *args); /* every PJRT function: Args* -> PJRT_Error* (NULL: ok) */

/* ---------------------------------------------------------------- slots of Array and Buffer */
static PyTypeObject *array_type = NULL, *buffer_type = NULL;
static Py_ssize_t off_aval, off_npy, off_buf, off_info, off_ptr;
static PyObject *executing_threads = NULL; /* client._executing_threads: a set of thread ids */
/* ShardedArray (a subclass of Array) and _BufferInfo, for the sharded plan (configure_sharded) */
static PyTypeObject *sharded_type = NULL, *info_type = NULL;
static Py_ssize_t off_sharding, off_buffers, off_indices;
static Py_ssize_t off_info_backend, off_info_shape, off_info_dtype, off_info_device,
    off_info_ready, off_info_settled;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *out) {
  PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
  if (descr == NULL) return -1;
  if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
    Py_DECREF(descr);
    PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
    return -1;
  }
  PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
  if (member->type != T_OBJECT_EX && member->type != T_OBJECT) {
    Py_DECREF(descr);
    PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
    return -1;
  }
  *out = member->offset;
  Py_DECREF(descr);
  return 0;
}

static PyObject *configure(PyObject *module, PyObject *args) {
  PyObject *array, *buffer, *threads;
  if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &array, &PyType_Type, &buffer,
                        &PySet_Type, &threads))
    return NULL;
  Py_ssize_t a_aval, a_npy, a_buf, b_info, b_ptr;
  if (slot_offset((PyTypeObject *)array, "aval", &a_aval) < 0 ||
      slot_offset((PyTypeObject *)array, "_npy", &a_npy) < 0 ||
      slot_offset((PyTypeObject *)array, "_buf", &a_buf) < 0 ||
      slot_offset((PyTypeObject *)buffer, "_info", &b_info) < 0 ||
      slot_offset((PyTypeObject *)buffer, "_ptr", &b_ptr) < 0)
    return NULL;
  Py_INCREF(array);
  Py_INCREF(buffer);
  Py_INCREF(threads);
  Py_XSETREF(array_type, (PyTypeObject *)array);
  Py_XSETREF(buffer_type, (PyTypeObject *)buffer);
  Py_XSETREF(executing_threads, threads);
  off_aval = a_aval, off_npy = a_npy, off_buf = a_buf, off_info = b_info, off_ptr = b_ptr;
  Py_RETURN_NONE;
}

/* configure_sharded(ShardedArray, _BufferInfo): the slots the sharded plan reads and writes */
static PyObject *configure_sharded(PyObject *module, PyObject *args) {
  PyObject *sharded, *info;
  if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &sharded, &PyType_Type, &info)) return NULL;
  if (array_type == NULL || !PyType_IsSubtype((PyTypeObject *)sharded, array_type)) {
    PyErr_SetString(PyExc_TypeError, "configure_sharded: configure() first, with its Array a "
                                     "base of the sharded class");
    return NULL;
  }
  PyTypeObject *s = (PyTypeObject *)sharded, *i = (PyTypeObject *)info;
  Py_ssize_t o[10];
  if (slot_offset(s, "_sharding", &o[0]) < 0 || slot_offset(s, "_buffers", &o[1]) < 0 ||
      slot_offset(s, "_indices", &o[2]) < 0 ||
      slot_offset(i, "backend", &o[4]) < 0 || slot_offset(i, "shape", &o[5]) < 0 ||
      slot_offset(i, "dtype", &o[6]) < 0 || slot_offset(i, "device", &o[7]) < 0 ||
      slot_offset(i, "ready", &o[8]) < 0 || slot_offset(i, "settled", &o[9]) < 0)
    return NULL;
  Py_INCREF(sharded);
  Py_INCREF(info);
  Py_XSETREF(sharded_type, s);
  Py_XSETREF(info_type, i);
  off_sharding = o[0], off_buffers = o[1], off_indices = o[2];
  off_info_backend = o[4], off_info_shape = o[5], off_info_dtype = o[6], off_info_device = o[7];
  off_info_ready = o[8], off_info_settled = o[9];
  Py_RETURN_NONE;
}

/* configure_info(_BufferInfo): the slots a Waiter reads and writes */
static PyObject *configure_info(PyObject *module, PyObject *info) {
  if (!PyType_Check(info)) {
    PyErr_SetString(PyExc_TypeError, "configure_info takes the _BufferInfo class");
    return NULL;
  }
  Py_ssize_t ready, settled;
  if (slot_offset((PyTypeObject *)info, "ready", &ready) < 0 ||
      slot_offset((PyTypeObject *)info, "settled", &settled) < 0)
    return NULL;
  Py_XSETREF(info_type, (PyTypeObject *)Py_NewRef(info));
  off_info_ready = ready, off_info_settled = settled;
  Py_RETURN_NONE;
}

/* A new object of `type` (a class with __slots__) with its slots left NULL, as object.__new__. */
static PyObject *new_instance(PyTypeObject *type) { return type->tp_alloc(type, 0); }

/* ---------------------------------------------------------------- templates */
typedef struct {
  char bytes[TEMPLATE_MAX];
  Py_ssize_t size;
} Template;

static int read_template(PyObject *obj, Template *out) {
  char *data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(obj, &data, &size) < 0) return -1;
  if (size > TEMPLATE_MAX || size < 16) {
    PyErr_Format(PyExc_ValueError, "an Args template of %zd bytes (expected 16..%d)", size,
                 TEMPLATE_MAX);
    return -1;
  }
  memcpy(out->bytes, data, size);
  out->size = size;
  return 0;
}

static int check_offset(const Template *t, Py_ssize_t offset, const char *what) {
  if (offset < 16 || offset + (Py_ssize_t)sizeof(void *) > t->size) {
    PyErr_Format(PyExc_ValueError, "offset %zd of %s lies outside its %zd-byte Args", offset,
                 what, t->size);
    return -1;
  }
  return 0;
}

#define PUT(buf, off, value) memcpy((char *)(buf) + (off), &(value), sizeof(value))

static void *as_pointer(PyObject *obj) { return PyLong_AsVoidPtr(obj); }

/* ---------------------------------------------------------------- Freer */
typedef struct {
  PyObject_HEAD pjrt_fn destroy;
  Template args; /* PJRT_Buffer_Destroy_Args */
  Py_ssize_t off_buffer;
} Freer;

static int Freer_init(Freer *self, PyObject *args, PyObject *kwds) {
  PyObject *fn, *template_;
  if (!PyArg_ParseTuple(args, "OOn", &fn, &template_, &self->off_buffer)) return -1;
  self->destroy = (pjrt_fn)as_pointer(fn);
  if (PyErr_Occurred() || read_template(template_, &self->args) < 0 ||
      check_offset(&self->args, self->off_buffer, "Buffer_Destroy.buffer") < 0)
    return -1;
  return 0;
}

/* free(pointer) -> the PJRT_Error pointer as an int (0: freed) */
static PyObject *Freer_free(Freer *self, PyObject *pointer) {
  void *buffer = as_pointer(pointer);
  if (buffer == NULL && PyErr_Occurred()) return NULL;
  char args[TEMPLATE_MAX];
  memcpy(args, self->args.bytes, self->args.size);
  PUT(args, self->off_buffer, buffer);
  void *error;
  Py_BEGIN_ALLOW_THREADS error = self->destroy(args);
  Py_END_ALLOW_THREADS return PyLong_FromVoidPtr(error);
}

static PyMethodDef Freer_methods[] = {
    {"free", (PyCFunction)Freer_free, METH_O, "PJRT_Buffer_Destroy; returns the error (0: ok)."},
    {NULL}};

static PyTypeObject FreerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "revax._src.runtime._fastpath.Freer",
    .tp_basicsize = sizeof(Freer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Frees PJRT buffers: Freer(Buffer_Destroy address, Args template, buffer offset).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Freer_init,
    .tp_methods = Freer_methods,
};

/* ---------------------------------------------------------------- Waiter */
/* Waits for Buffers (one per backend): `wait(buffers)` awaits the ready event of each Buffer not
   yet known to be computed and marks it so (its _BufferInfo's `ready`, or the Buffer takes the
   info's `settled` one), all in C: waiting for the 128 outputs of a grad costs microseconds. */
typedef struct {
  PyObject_HEAD pjrt_fn ready_event, event_await, event_destroy;
  Template ready_args; /* PJRT_Buffer_ReadyEvent_Args */
  Py_ssize_t off_ready_buffer, off_ready_event;
  Template event_args; /* PJRT_Event_Await_Args (the layout of Event_Destroy's too) */
  Py_ssize_t off_event;
} Waiter;

/* Waiter((ready_event, event_await, event_destroy), ready_template, (off_buffer, off_event),
          event_template, off_event) */
static int Waiter_init(Waiter *self, PyObject *args, PyObject *kwds) {
  PyObject *ready, *await_, *destroy, *ready_t, *event_t;
  if (!PyArg_ParseTuple(args, "(OOO)O(nn)On", &ready, &await_, &destroy, &ready_t,
                        &self->off_ready_buffer, &self->off_ready_event, &event_t,
                        &self->off_event))
    return -1;
  self->ready_event = (pjrt_fn)as_pointer(ready);
  self->event_await = (pjrt_fn)as_pointer(await_);
  self->event_destroy = (pjrt_fn)as_pointer(destroy);
  if (PyErr_Occurred()) return -1;
  if (read_template(ready_t, &self->ready_args) < 0 ||
      read_template(event_t, &self->event_args) < 0 ||
      check_offset(&self->ready_args, self->off_ready_buffer, "Buffer_ReadyEvent.buffer") < 0 ||
      check_offset(&self->ready_args, self->off_ready_event, "Buffer_ReadyEvent.event") < 0 ||
      check_offset(&self->event_args, self->off_event, "Event_Await.event") < 0)
    return -1;
  return 0;
}

/* Mark the Buffer `b` computed (GIL held). */
static void mark_ready(PyObject *b) {
  PyObject *info = SLOT(b, off_info);
  PyObject *settled = SLOT(info, off_info_settled);
  if (settled == NULL || settled == Py_None) {
    Py_XSETREF(SLOT(info, off_info_ready), Py_NewRef(Py_True));
  } else {
    SLOT(b, off_info) = Py_NewRef(settled);
    Py_DECREF(info);
  }
}

/* wait(buffers) -> None once every Buffer among `buffers` (a sequence of live Buffers) is
   computed, each then marked so; or (i, error): waiting for buffers[i] failed with the
   PJRT_Error `error` (for Python to raise), the buffers before it are marked. */
static PyObject *Waiter_wait(Waiter *self, PyObject *buffers) {
  if (buffer_type == NULL || info_type == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_fastpath.configure/configure_info were not called");
    return NULL;
  }
  PyObject *seq = PySequence_Fast(buffers, "wait(buffers): a sequence of Buffers");
  if (seq == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  void **events = NULL;
  PyObject *result = NULL;
  /* Of several, first wait for one pending buffer alone (the last): the outputs of a launch turn
     ready together, so the others are then mostly computed, and taking their ready events costs
     neither a callback on XLA's threads nor a blocking wait each. */
  for (Py_ssize_t i = n - 1; n > 1 && i >= 0; i--) {
    PyObject *b = items[i];
    if (!Py_IS_TYPE(b, buffer_type)) break; /* reported below */
    PyObject *info = SLOT(b, off_info);
    if (info == NULL || SLOT(info, off_info_ready) == Py_True) continue;
    PyObject *one = PyTuple_Pack(1, b);
    PyObject *first = one ? Waiter_wait(self, one) : NULL;
    Py_XDECREF(one);
    if (first == NULL) goto done;
    if (first != Py_None) { /* (0, error): report it as buffers[i]'s */
      result = Py_BuildValue("(nO)", i, PyTuple_GET_ITEM(first, 1));
      Py_DECREF(first);
      goto done;
    }
    Py_DECREF(first);
    break;
  }
  events = PyMem_Calloc(n > 0 ? n : 1, sizeof(void *));
  if (events == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  Py_ssize_t failed = -1, end = 0, marked = 0;
  void *error = NULL;
  char ready_args[TEMPLATE_MAX], event_args[TEMPLATE_MAX];
  memcpy(ready_args, self->ready_args.bytes, self->ready_args.size);
  memcpy(event_args, self->event_args.bytes, self->event_args.size);
  /* the ready events are taken with the GIL held: no Buffer is freed meanwhile */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *b = items[i];
    if (!Py_IS_TYPE(b, buffer_type)) {
      PyErr_SetString(PyExc_TypeError, "wait(buffers): a sequence of Buffers");
      goto cleanup;
    }
    PyObject *info = SLOT(b, off_info);
    if (info == NULL || SLOT(info, off_info_ready) == Py_True) continue;
    PyObject *ptr = SLOT(b, off_ptr);
    if (ptr == NULL || !PyLong_CheckExact(ptr)) {
      PyErr_SetString(PyExc_RuntimeError, "this buffer has been deleted");
      goto cleanup;
    }
    void *buffer = PyLong_AsVoidPtr(ptr);
    PUT(ready_args, self->off_ready_buffer, buffer);
    error = self->ready_event(ready_args);
    if (error != NULL) {
      failed = i;
      break;
    }
    memcpy(&events[i], ready_args + self->off_ready_event, sizeof(void *));
  }
  /* a failed ReadyEvent is reported alone; none of the buffers is waited for */
  end = marked = failed < 0 ? n : 0;
  Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; i < end; i++) {
    if (events[i] == NULL) continue;
    PUT(event_args, self->off_event, events[i]);
    void *await_error = self->event_await(event_args);
    void *destroy_error = self->event_destroy(event_args);
    events[i] = NULL;
    if (await_error != NULL || destroy_error != NULL) {
      /* (a second error of this buffer is left unfreed: only one can be reported) */
      failed = marked = i, error = await_error ? await_error : destroy_error;
      break; /* the events after it are destroyed below, unawaited */
    }
  }
  Py_END_ALLOW_THREADS
cleanup:
  for (Py_ssize_t i = 0; i < n; i++) { /* events taken but not awaited */
    if (events[i] == NULL) continue;
    PUT(event_args, self->off_event, events[i]);
    void *e = self->event_destroy(event_args);
    (void)e;
  }
  if (PyErr_Occurred()) goto done;
  for (Py_ssize_t i = 0; i < marked; i++) {
    PyObject *info = SLOT(items[i], off_info);
    if (info != NULL && SLOT(info, off_info_ready) != Py_True) mark_ready(items[i]);
  }
  result = failed < 0 ? Py_NewRef(Py_None)
                      : Py_BuildValue("(nN)", failed, PyLong_FromVoidPtr(error));
done:
  Py_DECREF(seq);
  PyMem_Free(events);
  return result;
}

static PyMethodDef Waiter_methods[] = {
    {"wait", (PyCFunction)Waiter_wait, METH_O,
     "wait(buffers) -> None, or (index, error) for the first buffer whose wait failed"},
    {NULL}};

static PyTypeObject WaiterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "revax._src.runtime._fastpath.Waiter",
    .tp_basicsize = sizeof(Waiter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Waits for Buffers to be computed (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Waiter_init,
    .tp_methods = Waiter_methods,
};

/* ---------------------------------------------------------------- Window */
/* The completion events of one device's computations still in flight: jit calls and eager ops
   return as soon as their work is queued (JAX's asynchronous dispatch), and their outputs' own
   ready events say when each is computed. A window keeps at most `limit` such events, oldest
   first: before a launch, the oldest are awaited until there is room (JAX's max in-flight
   computations), so a Python loop that runs ahead of the device cannot queue unbounded work
   (and the memory its arguments hold). Errors of the awaited events are dropped here: a failed
   computation's outputs carry its error and raise it where they are read.
   A window whose `track` is false asks for no completion events at all: the plugin bounds the
   work in flight itself (libtpu's `max_inflight_computations`), and on a TPU asking for each
   launch's completion event costs about as much as the launch (tests/tpu/RESULTS.md).
   Used with the GIL held (which orders its bookkeeping); each wait releases the GIL. */
typedef struct {
  PyObject_HEAD pjrt_fn event_await, event_destroy, event_is_ready;
  pjrt_fn error_destroy;  /* PJRT_Error_Destroy (returns void; its result is ignored) */
  Template event_args;    /* PJRT_Event_Await_Args (the layout of Event_Destroy's too) */
  Py_ssize_t off_event;
  Template ready_args; /* PJRT_Event_IsReady_Args */
  Py_ssize_t off_ready_event, off_is_ready;
  Template error_args; /* PJRT_Error_Destroy_Args */
  Py_ssize_t off_error;
  void **ring; /* `count` events from `head` on, modulo `capacity` */
  Py_ssize_t capacity, head, count, limit;
  Py_ssize_t launched; /* events pushed so far (for tests and statistics) */
  int track;           /* whether launches ask for completion events (see above) */
} Window;

/* Free a PJRT_Error (no GIL needed). */
static void window_drop_error(Window *w, void *error) {
  if (error == NULL) return;
  char args[TEMPLATE_MAX];
  memcpy(args, w->error_args.bytes, w->error_args.size);
  PUT(args, w->off_error, error);
  w->error_destroy(args);
}

/* Await and destroy `event`, dropping its errors (no GIL needed). */
static void window_settle_event(Window *w, void *event) {
  char args[TEMPLATE_MAX];
  memcpy(args, w->event_args.bytes, w->event_args.size);
  PUT(args, w->off_event, event);
  window_drop_error(w, w->event_await(args));
  window_drop_error(w, w->event_destroy(args));
}

/* Whether `event` has fired, with or without an error (no GIL needed). A failing query counts
   as fired: the caller then awaits the event and reports what that says. */
static int window_is_ready(Window *w, void *event) {
  char args[TEMPLATE_MAX];
  memcpy(args, w->ready_args.bytes, w->ready_args.size);
  PUT(args, w->off_ready_event, event);
  void *error = w->event_is_ready(args);
  if (error != NULL) {
    window_drop_error(w, error);
    return 1;
  }
  return *((char *)args + w->off_is_ready) != 0;
}

/* Await the oldest events until fewer than `limit` are left (GIL held; released per wait). */
static void window_make_room(Window *w) {
  while (w->count >= w->limit && w->count > 0) {
    void *event = w->ring[w->head];
    w->head = (w->head + 1) % w->capacity;
    w->count--;
    Py_BEGIN_ALLOW_THREADS window_settle_event(w, event);
    Py_END_ALLOW_THREADS
  }
}

/* Add `event` (GIL held): 0, or -1 where the ring cannot grow (no Python error set; the caller
   then awaits the event itself). */
static int window_push(Window *w, void *event) {
  if (w->count == w->capacity) {
    Py_ssize_t capacity = w->capacity ? 2 * w->capacity : 8;
    void **ring = PyMem_Malloc(capacity * sizeof(void *));
    if (ring == NULL) return -1;
    for (Py_ssize_t i = 0; i < w->count; i++) ring[i] = w->ring[(w->head + i) % w->capacity];
    PyMem_Free(w->ring);
    w->ring = ring, w->capacity = capacity, w->head = 0;
  }
  w->ring[(w->head + w->count) % w->capacity] = event;
  w->count++;
  w->launched++;
  return 0;
}

/* Await every event in the window (GIL held; released per wait). */
static void window_drain(Window *w) {
  while (w->count > 0) {
    void *event = w->ring[w->head];
    w->head = (w->head + 1) % w->capacity;
    w->count--;
    Py_BEGIN_ALLOW_THREADS window_settle_event(w, event);
    Py_END_ALLOW_THREADS
  }
}

/* Window((event_await, event_destroy, event_is_ready, error_destroy), event_template,
          off_event, ready_template, (off_ready_event, off_is_ready), error_template, off_error,
          limit) */
static int Window_init(Window *self, PyObject *args, PyObject *kwds) {
  PyObject *await_, *destroy, *is_ready, *error_destroy, *event_t, *ready_t, *error_t;
  if (!PyArg_ParseTuple(args, "(OOOO)OnO(nn)Onn", &await_, &destroy, &is_ready, &error_destroy,
                        &event_t, &self->off_event, &ready_t, &self->off_ready_event,
                        &self->off_is_ready, &error_t, &self->off_error, &self->limit))
    return -1;
  self->event_await = (pjrt_fn)as_pointer(await_);
  self->event_destroy = (pjrt_fn)as_pointer(destroy);
  self->event_is_ready = (pjrt_fn)as_pointer(is_ready);
  self->error_destroy = (pjrt_fn)as_pointer(error_destroy);
  if (PyErr_Occurred()) return -1;
  if (read_template(event_t, &self->event_args) < 0 ||
      read_template(ready_t, &self->ready_args) < 0 ||
      read_template(error_t, &self->error_args) < 0 ||
      check_offset(&self->event_args, self->off_event, "Event_Await.event") < 0 ||
      check_offset(&self->ready_args, self->off_ready_event, "Event_IsReady.event") < 0 ||
      check_offset(&self->error_args, self->off_error, "Error_Destroy.error") < 0)
    return -1;
  if (self->off_is_ready < 16 || self->off_is_ready >= self->ready_args.size) {
    PyErr_SetString(PyExc_ValueError, "Event_IsReady.is_ready lies outside its Args");
    return -1;
  }
  if (self->limit < 1) {
    PyErr_SetString(PyExc_ValueError, "a window's limit must be at least 1");
    return -1;
  }
  self->track = 1;
  return 0;
}

static void Window_dealloc(Window *self) {
  window_drain(self);
  PyMem_Free(self->ring);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t Window_len(Window *self) { return self->count; }

static PyObject *Window_make_room(Window *self, PyObject *unused) {
  window_make_room(self);
  Py_RETURN_NONE;
}

static PyObject *Window_drain(Window *self, PyObject *unused) {
  window_drain(self);
  Py_RETURN_NONE;
}

/* push(event): add a completion event (the ctypes path's launches, with the window's limit) */
static PyObject *Window_push(Window *self, PyObject *event) {
  void *e = as_pointer(event);
  if (e == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null event pointer");
    return NULL;
  }
  if (window_push(self, e) < 0) return PyErr_NoMemory();
  Py_RETURN_NONE;
}

static PyObject *Window_is_ready(Window *self, PyObject *event) {
  void *e = as_pointer(event);
  if (e == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null event pointer");
    return NULL;
  }
  return PyBool_FromLong(window_is_ready(self, e));
}

static PyObject *Window_get_limit(Window *self, void *closure) {
  return PyLong_FromSsize_t(self->limit);
}

static int Window_set_limit(Window *self, PyObject *value, void *closure) {
  Py_ssize_t limit = value ? PyLong_AsSsize_t(value) : -1;
  if (limit == -1 && PyErr_Occurred()) return -1;
  if (limit < 1) {
    PyErr_SetString(PyExc_ValueError, "a window's limit must be at least 1");
    return -1;
  }
  self->limit = limit;
  return 0;
}

static PyObject *Window_get_launched(Window *self, void *closure) {
  return PyLong_FromSsize_t(self->launched);
}

/* Launches counted by Python's execute path (Executable.execute with an untracked window, the
   TPU's mode, counts its launch itself as the ctypes Window's `launched += 1`). */
static int Window_set_launched(Window *self, PyObject *value, void *closure) {
  Py_ssize_t launched = value ? PyLong_AsSsize_t(value) : -1;
  if (launched < 0) {
    if (!PyErr_Occurred())
      PyErr_SetString(value ? PyExc_ValueError : PyExc_TypeError,
                      value ? "launched cannot be negative" : "launched cannot be deleted");
    return -1;
  }
  self->launched = launched;
  return 0;
}

static PyObject *Window_get_track(Window *self, void *closure) {
  return PyBool_FromLong(self->track);
}

static int Window_set_track(Window *self, PyObject *value, void *closure) {
  int track = value ? PyObject_IsTrue(value) : -1;
  if (track < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "track cannot be deleted");
    return -1;
  }
  self->track = track;
  return 0;
}

static PyGetSetDef Window_getset[] = {
    {"limit", (getter)Window_get_limit, (setter)Window_set_limit,
     "at most this many computations in flight", NULL},
    {"launched", (getter)Window_get_launched, (setter)Window_set_launched,
     "launches counted so far", NULL},
    {"track", (getter)Window_get_track, (setter)Window_set_track,
     "whether launches ask for completion events (false: the plugin bounds its work)", NULL},
    {NULL}};

static PyMethodDef Window_methods[] = {
    {"make_room", (PyCFunction)Window_make_room, METH_NOARGS,
     "await the oldest events until fewer than `limit` are in flight"},
    {"push", (PyCFunction)Window_push, METH_O, "push(event): add a completion event"},
    {"drain", (PyCFunction)Window_drain, METH_NOARGS, "await every event in flight"},
    {"is_ready", (PyCFunction)Window_is_ready, METH_O,
     "is_ready(event): whether the event has fired"},
    {NULL}};

static PySequenceMethods Window_as_sequence = {.sq_length = (lenfunc)Window_len};

static PyTypeObject WindowType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "revax._src.runtime._fastpath.Window",
    .tp_basicsize = sizeof(Window),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One device's computations in flight, at most `limit` (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Window_init,
    .tp_dealloc = (destructor)Window_dealloc,
    .tp_methods = Window_methods,
    .tp_getset = Window_getset,
    .tp_as_sequence = &Window_as_sequence,
};

/* The Window `obj` names, NULL for None (a program that waits), or -1 on a wrong type. */
static int as_window(PyObject *obj, Window **out) {
  if (obj == Py_None) {
    *out = NULL;
    return 0;
  }
  if (!Py_IS_TYPE(obj, &WindowType)) {
    PyErr_SetString(PyExc_TypeError, "expected a Window or None");
    return -1;
  }
  *out = (Window *)obj;
  return 0;
}

/* ---------------------------------------------------------------- Runner */
typedef struct {
  PyObject_HEAD pjrt_fn execute, event_await, event_destroy;
  Template exec_args; /* PJRT_LoadedExecutable_Execute_Args: executable, options, num_devices set */
  Py_ssize_t off_argument_lists, off_num_args, off_output_lists, off_events, off_device;
  Template event_args; /* PJRT_Event_Await_Args (the same layout as Event_Destroy's) */
  Py_ssize_t off_event;
  Py_ssize_t num_outputs;
  Py_ssize_t num_devices; /* 1, or the devices of a multi-device program (run_sharded) */
  /* run_sharded's per-call PJRT_ExecuteOptions (its launch_id set per call), when given */
  Template options_args;
  Py_ssize_t off_options, off_launch_id;
  int has_options;
  int portable;     /* whether execute_device is set per call */
  /* the plan (set_plan): what jit's repeated call checks and makes */
  PyObject *avals;     /* tuple: the aval of each argument */
  PyObject *consts;    /* tuple of Arrays passed before the arguments */
  PyObject *infos;     /* tuple: the Buffer _info of each output, computed when returned */
  PyObject *pending_infos; /* tuple: the same for outputs still being computed */
  PyObject *window;    /* the plan device's Window, or None: the program is awaited */
  PyObject *out_avals; /* tuple: the aval of each output */
  void *device;        /* PJRT_Device of the plan */
  /* the sharded plan (set_sharded_plan): what a repeated call over a mesh checks and makes */
  PyObject *s_shardings;     /* tuple: the sharding of each operand (constants first) */
  PyObject *s_avals;         /* tuple: the aval of each operand */
  PyObject *s_consts;        /* tuple of ShardedArrays passed before the arguments */
  PyObject *s_out_avals;     /* tuple: the aval of each output */
  PyObject *s_out_shardings; /* tuple: the sharding of each output */
  PyObject *s_out_indices;   /* tuple: each output's list of blocks (its `_indices`) */
  PyObject *s_out_specs;     /* per device, per output: (shape, dtype, Device) of its buffer */
  PyObject *s_backend;       /* the Backend its buffers' infos name */
  Py_ssize_t *s_order;       /* device d of the executable takes the block at s_order[d] */
} Runner;

static int Runner_traverse(Runner *self, visitproc visit, void *arg) {
  Py_VISIT(self->avals);
  Py_VISIT(self->consts);
  Py_VISIT(self->infos);
  Py_VISIT(self->pending_infos);
  Py_VISIT(self->window);
  Py_VISIT(self->out_avals);
  Py_VISIT(self->s_shardings);
  Py_VISIT(self->s_avals);
  Py_VISIT(self->s_consts);
  Py_VISIT(self->s_out_avals);
  Py_VISIT(self->s_out_shardings);
  Py_VISIT(self->s_out_indices);
  Py_VISIT(self->s_out_specs);
  Py_VISIT(self->s_backend);
  return 0;
}

static int Runner_clear(Runner *self) {
  Py_CLEAR(self->avals);
  Py_CLEAR(self->consts);
  Py_CLEAR(self->infos);
  Py_CLEAR(self->pending_infos);
  Py_CLEAR(self->window);
  Py_CLEAR(self->out_avals);
  Py_CLEAR(self->s_shardings);
  Py_CLEAR(self->s_avals);
  Py_CLEAR(self->s_consts);
  Py_CLEAR(self->s_out_avals);
  Py_CLEAR(self->s_out_shardings);
  Py_CLEAR(self->s_out_indices);
  Py_CLEAR(self->s_out_specs);
  Py_CLEAR(self->s_backend);
  return 0;
}

static void Runner_dealloc(Runner *self) {
  PyObject_GC_UnTrack(self);
  Runner_clear(self);
  PyMem_Free(self->s_order);
  self->s_order = NULL;
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Runner(execute, await, destroy, exec_template, (off_argument_lists, off_num_args,
          off_output_lists, off_events, off_device), event_template, off_event, num_outputs,
          portable, num_devices, options_template, off_options, off_launch_id);
   exec_template's num_devices must say the same; the last three (a PJRT_ExecuteOptions
   template, the offset of `options` in the Execute Args and of `launch_id` in the options)
   let run_sharded give each launch its own id */
static int Runner_init(Runner *self, PyObject *args, PyObject *kwds) {
  PyObject *execute, *await_, *destroy, *exec_template, *event_template;
  PyObject *options_template = NULL;
  int portable;
  self->num_devices = 1;
  self->has_options = 0;
  if (!PyArg_ParseTuple(args, "OOOO(nnnnn)Onnp|nOnn", &execute, &await_, &destroy,
                        &exec_template, &self->off_argument_lists, &self->off_num_args,
                        &self->off_output_lists, &self->off_events, &self->off_device,
                        &event_template, &self->off_event, &self->num_outputs, &portable,
                        &self->num_devices, &options_template, &self->off_options,
                        &self->off_launch_id))
    return -1;
  if (options_template != NULL) {
    if (read_template(options_template, &self->options_args) < 0 ||
        check_offset(&self->options_args, self->off_launch_id, "launch_id") < 0)
      return -1;
    self->has_options = 1;
  }
  if (self->num_devices < 1 || (portable && self->num_devices != 1)) {
    PyErr_Format(PyExc_ValueError, "a runner for %zd devices (portable: %d)", self->num_devices,
                 portable);
    return -1;
  }
  self->portable = portable;
  self->execute = (pjrt_fn)as_pointer(execute);
  self->event_await = (pjrt_fn)as_pointer(await_);
  self->event_destroy = (pjrt_fn)as_pointer(destroy);
  if (PyErr_Occurred()) return -1;
  if (read_template(exec_template, &self->exec_args) < 0 ||
      read_template(event_template, &self->event_args) < 0)
    return -1;
  if (check_offset(&self->exec_args, self->off_argument_lists, "argument_lists") < 0 ||
      check_offset(&self->exec_args, self->off_num_args, "num_args") < 0 ||
      check_offset(&self->exec_args, self->off_output_lists, "output_lists") < 0 ||
      check_offset(&self->exec_args, self->off_events, "device_complete_events") < 0 ||
      check_offset(&self->exec_args, self->off_device, "execute_device") < 0 ||
      check_offset(&self->event_args, self->off_event, "event") < 0 ||
      (self->has_options && check_offset(&self->exec_args, self->off_options, "options") < 0))
    return -1;
  if (self->num_outputs < 0) {
    PyErr_SetString(PyExc_ValueError, "num_outputs < 0");
    return -1;
  }
  return 0;
}

/* Execute on `inputs`. With a `window` (the device's computations in flight), the launch first
   makes room in it, and returns as soon as the work is queued: if the computation has not
   finished by then its completion event joins the window. If it has (XLA:CPU runs small
   programs inline), the event is destroyed; an error it carries came from a failed input
   (a program failing inline makes execute itself fail), and is left to the outputs, which
   carry it, as in JAX. Without a window (a program with host callbacks, which JAX also waits
   for), the completion event is awaited here and its error reported. With a window that does
   not track (its `track` false), no completion event is asked for: the launch returns queued.
   Returns 0 with `outputs` filled and computed, 2 with `outputs` filled and still being
   computed, 1 with the three error pointers set (outputs filled only if execute itself
   succeeded), or -1 with a Python error. */
static int execute(Runner *self, void **inputs, Py_ssize_t count, void *device, void **outputs,
                   void *errors[3], Window *window) {
  char exec_args[TEMPLATE_MAX], event_args[TEMPLATE_MAX];
  void *argument_list[1] = {inputs};
  void *output_list[1] = {outputs};
  void *events[1] = {NULL};
  int untracked = window != NULL && !window->track;
  void *events_address = untracked ? NULL : (void *)events;
  void *argument_lists = argument_list, *output_lists = output_list;
  size_t num_args = (size_t)count;
  memcpy(exec_args, self->exec_args.bytes, self->exec_args.size);
  PUT(exec_args, self->off_argument_lists, argument_lists);
  PUT(exec_args, self->off_num_args, num_args);
  PUT(exec_args, self->off_output_lists, output_lists);
  PUT(exec_args, self->off_events, events_address);
  if (self->portable) PUT(exec_args, self->off_device, device);
  memcpy(event_args, self->event_args.bytes, self->event_args.size);
  if (window != NULL && !untracked) window_make_room(window);

  /* the calling thread is in execute: a host callback run inline on it may run programs */
  PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
  if (ident == NULL) return -1;
  int present = PySet_Contains(executing_threads, ident);
  if (present < 0 || (!present && PySet_Add(executing_threads, ident) < 0)) {
    Py_DECREF(ident);
    return -1;
  }
  void *exec_error, *await_error = NULL, *destroy_error = NULL;
  int pending = 0, failed_input = 0;
  Py_BEGIN_ALLOW_THREADS exec_error = self->execute(exec_args);
  if (exec_error == NULL && untracked) {
    pending = 1;
  } else if (exec_error == NULL) {
    if (window != NULL && events[0] != NULL && !window_is_ready(window, events[0])) {
      pending = 1;
    } else {
      PUT(event_args, self->off_event, events[0]);
      await_error = self->event_await(event_args);
      destroy_error = self->event_destroy(event_args);
      if (window != NULL && await_error != NULL) { /* left to the outputs (see above) */
        window_drop_error(window, await_error);
        window_drop_error(window, destroy_error);
        await_error = destroy_error = NULL;
        failed_input = 1;
      }
    }
  }
  Py_END_ALLOW_THREADS if (!present) {
    if (PySet_Discard(executing_threads, ident) < 0) PyErr_Clear();
  }
  Py_DECREF(ident);
  if (pending && untracked) {
    window->launched++;
    return 2;
  }
  if (pending) {
    if (window_push(window, events[0]) == 0) return 2;
    /* the window cannot grow (out of memory): wait for this one here */
    PUT(event_args, self->off_event, events[0]);
    Py_BEGIN_ALLOW_THREADS await_error = self->event_await(event_args);
    destroy_error = self->event_destroy(event_args);
    Py_END_ALLOW_THREADS
  }
  if (exec_error || await_error || destroy_error) {
    errors[0] = exec_error, errors[1] = await_error, errors[2] = destroy_error;
    return 1;
  }
  return failed_input ? 2 : 0; /* outputs that carry an error are not known to be computed */
}

/* (execute error, await error, destroy error, [output pointers]) for Python to report */
static PyObject *failure(void *errors[3], void **outputs, Py_ssize_t n) {
  PyObject *list = PyList_New(errors[0] ? 0 : n);
  if (list == NULL) return NULL;
  if (!errors[0]) {
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *p = outputs[i] ? PyLong_FromVoidPtr(outputs[i]) : Py_NewRef(Py_None);
      if (p == NULL) {
        Py_DECREF(list);
        return NULL;
      }
      PyList_SET_ITEM(list, i, p);
    }
  }
  return Py_BuildValue("(NNNN)", PyLong_FromVoidPtr(errors[0]), PyLong_FromVoidPtr(errors[1]),
                       PyLong_FromVoidPtr(errors[2]), list);
}

/* run(pointers, device, window) -> [output pointers] (computed), ([output pointers],) (still
   being computed, see `execute`), or a failure tuple (see `failure`) */
static PyObject *Runner_run(Runner *self, PyObject *const *args, Py_ssize_t nargs) {
  if (self->num_devices != 1) {
    PyErr_SetString(PyExc_ValueError, "run() of a multi-device runner: use run_sharded()");
    return NULL;
  }
  if (nargs != 3 || !PyList_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "run(pointers: list, device: int, window)");
    return NULL;
  }
  PyObject *list = args[0];
  void *device = as_pointer(args[1]);
  if (device == NULL && PyErr_Occurred()) return NULL;
  Window *window;
  if (as_window(args[2], &window) < 0) return NULL;
  Py_ssize_t count = PyList_GET_SIZE(list), n = self->num_outputs;
  void *stack_in[STACK_BUFFERS], *stack_out[STACK_BUFFERS];
  void **inputs = count <= STACK_BUFFERS ? stack_in : PyMem_Malloc(count * sizeof(void *));
  void **outputs = n <= STACK_BUFFERS ? stack_out : PyMem_Calloc(n, sizeof(void *));
  PyObject *result = NULL;
  if (inputs == NULL || outputs == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (n <= STACK_BUFFERS) memset(outputs, 0, n * sizeof(void *));
  for (Py_ssize_t i = 0; i < count; i++) {
    inputs[i] = as_pointer(PyList_GET_ITEM(list, i));
    if (inputs[i] == NULL) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null buffer pointer");
      goto done;
    }
  }
  void *errors[3];
  int status = execute(self, inputs, count, device, outputs, errors, window);
  if (status < 0) goto done;
  if (status == 1) {
    result = failure(errors, outputs, n);
    goto done;
  }
  result = PyList_New(n);
  if (result == NULL) goto done; /* the outputs leak only if Python is out of memory */
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *p = PyLong_FromVoidPtr(outputs[i]);
    if (p == NULL) {
      Py_CLEAR(result);
      goto done;
    }
    PyList_SET_ITEM(result, i, p);
  }
  if (status == 2) result = Py_BuildValue("(N)", result);
done:
  if (inputs != stack_in) PyMem_Free(inputs);
  if (outputs != stack_out) PyMem_Free(outputs);
  return result;
}

/* set_plan(avals, consts, infos, pending_infos, out_avals, device, window) */
static PyObject *Runner_set_plan(Runner *self, PyObject *args) {
  PyObject *avals, *consts, *infos, *pending_infos, *out_avals, *device, *window;
  if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO", &PyTuple_Type, &avals, &PyTuple_Type, &consts,
                        &PyTuple_Type, &infos, &PyTuple_Type, &pending_infos, &PyTuple_Type,
                        &out_avals, &device, &window))
    return NULL;
  Window *unused;
  if (as_window(window, &unused) < 0) return NULL;
  if (array_type == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_fastpath.configure was not called");
    return NULL;
  }
  if (PyTuple_GET_SIZE(infos) != self->num_outputs ||
      PyTuple_GET_SIZE(pending_infos) != self->num_outputs ||
      PyTuple_GET_SIZE(out_avals) != self->num_outputs) {
    PyErr_Format(PyExc_ValueError, "a plan for %zd outputs, got %zd and %zd infos and %zd avals",
                 self->num_outputs, PyTuple_GET_SIZE(infos), PyTuple_GET_SIZE(pending_infos),
                 PyTuple_GET_SIZE(out_avals));
    return NULL;
  }
  void *device_pointer = as_pointer(device);
  if (device_pointer == NULL && PyErr_Occurred()) return NULL;
  Py_INCREF(avals), Py_INCREF(consts), Py_INCREF(infos), Py_INCREF(out_avals);
  Py_XSETREF(self->avals, avals);
  Py_XSETREF(self->consts, consts);
  Py_XSETREF(self->infos, infos);
  Py_XSETREF(self->pending_infos, Py_NewRef(pending_infos));
  Py_XSETREF(self->window, Py_NewRef(window));
  Py_XSETREF(self->out_avals, out_avals);
  self->device = device_pointer;
  Py_RETURN_NONE;
}

/* The live PJRT_Buffer of `x` if it is an Array with a device buffer, else NULL (no error). */
static inline void *buffer_of(PyObject *x) {
  if (Py_TYPE(x) != array_type) return NULL;
  PyObject *buf = SLOT(x, off_buf);
  if (buf == NULL || Py_TYPE(buf) != buffer_type) return NULL;
  PyObject *ptr = SLOT(buf, off_ptr);
  if (ptr == NULL || !PyLong_CheckExact(ptr)) return NULL;
  void *p = PyLong_AsVoidPtr(ptr);
  if (p == NULL) PyErr_Clear();
  return p;
}

/* call(leaves) -> [output Arrays]; None where the plan does not cover these arguments (the
   general path then runs the call); or a failure tuple (see `failure`). */
static PyObject *Runner_call(Runner *self, PyObject *leaves) {
  if (self->avals == NULL || self->num_devices != 1) {
    PyErr_SetString(PyExc_RuntimeError, "Runner.call before set_plan (or on several devices)");
    return NULL;
  }
  PyObject *seq = PySequence_Fast(leaves, "call(leaves): a sequence");
  if (seq == NULL) return NULL;
  Py_ssize_t nleaves = PySequence_Fast_GET_SIZE(seq);
  Py_ssize_t nconsts = PyTuple_GET_SIZE(self->consts);
  Py_ssize_t count = nconsts + nleaves, n = self->num_outputs;
  PyObject *result = NULL;
  void *stack_in[STACK_BUFFERS], *stack_out[STACK_BUFFERS];
  void **inputs = count <= STACK_BUFFERS ? stack_in : PyMem_Malloc(count * sizeof(void *));
  void **outputs = n <= STACK_BUFFERS ? stack_out : PyMem_Calloc(n, sizeof(void *));
  if (inputs == NULL || outputs == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (n <= STACK_BUFFERS) memset(outputs, 0, n * sizeof(void *));
  if (nleaves != PyTuple_GET_SIZE(self->avals)) goto miss;
  for (Py_ssize_t i = 0; i < nconsts; i++) {
    if ((inputs[i] = buffer_of(PyTuple_GET_ITEM(self->consts, i))) == NULL) goto miss;
  }
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < nleaves; i++) {
    PyObject *x = items[i];
    if ((inputs[nconsts + i] = buffer_of(x)) == NULL) goto miss;
    PyObject *aval = SLOT(x, off_aval), *expected = PyTuple_GET_ITEM(self->avals, i);
    if (aval != expected) {
      if (aval == NULL) goto miss;
      int same = PyObject_RichCompareBool(aval, expected, Py_EQ);
      if (same < 0) goto done;
      if (!same) goto miss;
    }
  }
  void *errors[3];
  Window *window = self->window == Py_None ? NULL : (Window *)self->window;
  int status = execute(self, inputs, count, self->device, outputs, errors, window);
  if (status < 0) goto done;
  if (status == 1) {
    result = failure(errors, outputs, n);
    goto done;
  }
  PyObject *infos = status == 2 ? self->pending_infos : self->infos;
  result = PyList_New(n);
  Py_ssize_t made = 0;
  if (result != NULL) {
    for (; made < n; made++) {
      PyObject *pointer = PyLong_FromVoidPtr(outputs[made]);
      PyObject *buffer = pointer ? new_instance(buffer_type) : NULL;
      PyObject *array = buffer ? new_instance(array_type) : NULL;
      if (array == NULL) {
        if (buffer != NULL) { /* owns the pointer now: its finalizer frees it */
          SLOT(buffer, off_info) = Py_NewRef(PyTuple_GET_ITEM(infos, made));
          SLOT(buffer, off_ptr) = pointer;
          Py_DECREF(buffer);
          made++;
        } else {
          Py_XDECREF(pointer);
        }
        break;
      }
      SLOT(buffer, off_info) = Py_NewRef(PyTuple_GET_ITEM(infos, made));
      SLOT(buffer, off_ptr) = pointer;
      SLOT(array, off_aval) = Py_NewRef(PyTuple_GET_ITEM(self->out_avals, made));
      SLOT(array, off_npy) = Py_NewRef(Py_None);
      SLOT(array, off_buf) = buffer;
      PyList_SET_ITEM(result, made, array);
    }
  }
  if (made < n) { /* out of memory: hand the rest back as a failure, for Python to free */
    Py_XDECREF(result);
    PyErr_Clear();
    void *none[3] = {NULL, NULL, NULL};
    result = failure(none, outputs + made, n - made);
  }
  goto done;
miss:
  result = Py_NewRef(Py_None);
done:
  Py_DECREF(seq);
  if (inputs != stack_in) PyMem_Free(inputs);
  if (outputs != stack_out) PyMem_Free(outputs);
  return result;
}

/* run_sharded(lists, wait=True, launch_id=0) -> one list of output pointers per device; or,
   when a step failed, (execute error, [await errors], [event destroy errors], [per-device
   output pointer lists]) with every error pointer (0: none) for Python to report or free.
   `lists` holds one list of PJRT_Buffer pointers per device, in the program's device order, all
   of one length. With wait false the call returns once every device has its work queued, as
   ([output pointer lists], [completion event per device]): the outputs are ready when their own
   ready events say so; the events are for `settle`. launch_id (with the options template) names this launch to the devices' collectives: two
   launches in flight at once must not share one. */
static PyObject *Runner_run_sharded(Runner *self, PyObject *args) {
  PyObject *lists;
  int wait = 1, launch_id = 0;
  if (!PyArg_ParseTuple(args, "O|pi:run_sharded", &lists, &wait, &launch_id)) return NULL;
  Py_ssize_t nd = self->num_devices, n = self->num_outputs;
  if (!PyList_Check(lists) || PyList_GET_SIZE(lists) != nd) {
    PyErr_Format(PyExc_ValueError, "run_sharded takes a list of %zd argument lists", nd);
    return NULL;
  }
  Py_ssize_t count = -1;
  for (Py_ssize_t d = 0; d < nd; d++) {
    PyObject *list = PyList_GET_ITEM(lists, d);
    if (!PyList_Check(list) || (count >= 0 && PyList_GET_SIZE(list) != count)) {
      PyErr_SetString(PyExc_ValueError, "run_sharded: one list of equal length per device");
      return NULL;
    }
    count = PyList_GET_SIZE(list);
  }
  Py_ssize_t per_in = count > 0 ? count : 1, per_out = n > 0 ? n : 1;
  void **inputs = PyMem_Calloc(nd * per_in, sizeof(void *));
  void **outputs = PyMem_Calloc(nd * per_out, sizeof(void *));
  void **arg_lists = PyMem_Calloc(nd, sizeof(void *));
  void **out_lists = PyMem_Calloc(nd, sizeof(void *));
  void **events = PyMem_Calloc(nd, sizeof(void *));
  void **await_errors = PyMem_Calloc(nd, sizeof(void *));
  void **destroy_errors = PyMem_Calloc(nd, sizeof(void *));
  PyObject *result = NULL;
  if (!inputs || !outputs || !arg_lists || !out_lists || !events || !await_errors ||
      !destroy_errors) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t d = 0; d < nd; d++) {
    PyObject *list = PyList_GET_ITEM(lists, d);
    for (Py_ssize_t i = 0; i < count; i++) {
      void *p = as_pointer(PyList_GET_ITEM(list, i));
      if (p == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null buffer pointer");
        goto done;
      }
      inputs[d * per_in + i] = p;
    }
    arg_lists[d] = inputs + d * per_in;
    out_lists[d] = outputs + d * per_out;
  }
  char exec_args[TEMPLATE_MAX], event_args[TEMPLATE_MAX];
  size_t num_args = (size_t)count;
  memcpy(exec_args, self->exec_args.bytes, self->exec_args.size);
  PUT(exec_args, self->off_argument_lists, arg_lists);
  PUT(exec_args, self->off_num_args, num_args);
  PUT(exec_args, self->off_output_lists, out_lists);
  void *events_address = events;
  PUT(exec_args, self->off_events, events_address);
  char options_args[TEMPLATE_MAX];
  if (self->has_options) {
    void *options_address = options_args;
    memcpy(options_args, self->options_args.bytes, self->options_args.size);
    PUT(options_args, self->off_launch_id, launch_id);
    PUT(exec_args, self->off_options, options_address);
  }
  memcpy(event_args, self->event_args.bytes, self->event_args.size);
  void *exec_error;
  int failed = 0;
  Py_BEGIN_ALLOW_THREADS exec_error = self->execute(exec_args);
  if (exec_error == NULL && wait) {
    for (Py_ssize_t d = 0; d < nd; d++) { /* every event is awaited and freed, errors or not */
      PUT(event_args, self->off_event, events[d]);
      await_errors[d] = self->event_await(event_args);
      destroy_errors[d] = self->event_destroy(event_args);
      failed |= await_errors[d] != NULL || destroy_errors[d] != NULL;
    }
  }
  Py_END_ALLOW_THREADS failed |= exec_error != NULL;
  result = PyList_New(nd);
  if (result == NULL) goto done;
  for (Py_ssize_t d = 0; d < nd; d++) {
    PyObject *outs = PyList_New(exec_error ? 0 : n);
    if (outs == NULL) {
      Py_CLEAR(result);
      goto done;
    }
    PyList_SET_ITEM(result, d, outs);
    for (Py_ssize_t k = 0; !exec_error && k < n; k++) {
      void *p = outputs[d * per_out + k];
      PyObject *v = p ? PyLong_FromVoidPtr(p) : Py_NewRef(Py_None);
      if (v == NULL) {
        Py_CLEAR(result);
        goto done;
      }
      PyList_SET_ITEM(outs, k, v);
    }
  }
  if (failed) {
    PyObject *awaits = PyList_New(nd), *destroys = PyList_New(nd);
    if (awaits == NULL || destroys == NULL) {
      Py_XDECREF(awaits);
      Py_XDECREF(destroys);
      Py_CLEAR(result);
      goto done;
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
      PyList_SET_ITEM(awaits, d, PyLong_FromVoidPtr(await_errors[d]));
      PyList_SET_ITEM(destroys, d, PyLong_FromVoidPtr(destroy_errors[d]));
    }
    result = Py_BuildValue("(NNNN)", PyLong_FromVoidPtr(exec_error), awaits, destroys, result);
  } else if (!wait) {
    PyObject *pending = PyList_New(nd);
    if (pending == NULL) {
      Py_CLEAR(result);
      goto done;
    }
    for (Py_ssize_t d = 0; d < nd; d++) {
      PyObject *e = PyLong_FromVoidPtr(events[d]);
      if (e == NULL) {
        Py_DECREF(pending);
        Py_CLEAR(result);
        goto done;
      }
      PyList_SET_ITEM(pending, d, e);
    }
    result = Py_BuildValue("(NN)", result, pending);
  }
done:
  PyMem_Free(inputs);
  PyMem_Free(outputs);
  PyMem_Free(arg_lists);
  PyMem_Free(out_lists);
  PyMem_Free(events);
  PyMem_Free(await_errors);
  PyMem_Free(destroy_errors);
  return result;
}

/* settle(events) -> [error pointers]: await and destroy each completion event (a list of
   pointers from run_sharded without wait), the GIL released; the errors (none: an empty list)
   are for Python to free or report. */
static PyObject *Runner_settle(Runner *self, PyObject *list) {
  if (!PyList_Check(list)) {
    PyErr_SetString(PyExc_TypeError, "settle takes a list of event pointers");
    return NULL;
  }
  Py_ssize_t n = PyList_GET_SIZE(list);
  void **events = PyMem_Calloc(n > 0 ? n : 1, sizeof(void *));
  void **errors = PyMem_Calloc(2 * (n > 0 ? n : 1), sizeof(void *));
  PyObject *result = NULL;
  if (!events || !errors) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    events[i] = as_pointer(PyList_GET_ITEM(list, i));
    if (events[i] == NULL && PyErr_Occurred()) goto done;
  }
  char event_args[TEMPLATE_MAX];
  memcpy(event_args, self->event_args.bytes, self->event_args.size);
  Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; i < n; i++) {
    if (events[i] == NULL) continue;
    PUT(event_args, self->off_event, events[i]);
    errors[2 * i] = self->event_await(event_args);
    errors[2 * i + 1] = self->event_destroy(event_args);
  }
  Py_END_ALLOW_THREADS result = PyList_New(0);
  for (Py_ssize_t i = 0; result != NULL && i < 2 * n; i++) {
    if (errors[i] == NULL) continue;
    PyObject *e = PyLong_FromVoidPtr(errors[i]);
    if (e == NULL || PyList_Append(result, e) < 0) Py_CLEAR(result);
    Py_XDECREF(e);
  }
done:
  PyMem_Free(events);
  PyMem_Free(errors);
  return result;
}

/* set_sharded_plan(shardings, avals, consts, order, out_avals, out_shardings, out_indices,
                    out_specs, backend): what call_sharded checks and makes (see there) */
static PyObject *Runner_set_sharded_plan(Runner *self, PyObject *args) {
  PyObject *shardings, *avals, *consts, *order, *out_avals, *out_shardings, *out_indices,
      *out_specs, *backend;
  if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O:set_sharded_plan", &PyTuple_Type, &shardings,
                        &PyTuple_Type, &avals, &PyTuple_Type, &consts, &PyTuple_Type, &order,
                        &PyTuple_Type, &out_avals, &PyTuple_Type, &out_shardings, &PyTuple_Type,
                        &out_indices, &PyTuple_Type, &out_specs, &backend))
    return NULL;
  Py_ssize_t nd = self->num_devices, n = self->num_outputs;
  if (sharded_type == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_fastpath.configure_sharded was not called");
    return NULL;
  }
  if (nd < 2 || PyTuple_GET_SIZE(shardings) != PyTuple_GET_SIZE(avals) ||
      PyTuple_GET_SIZE(consts) > PyTuple_GET_SIZE(avals) || PyTuple_GET_SIZE(order) != nd ||
      PyTuple_GET_SIZE(out_avals) != n || PyTuple_GET_SIZE(out_shardings) != n ||
      PyTuple_GET_SIZE(out_indices) != n || PyTuple_GET_SIZE(out_specs) != nd) {
    PyErr_Format(PyExc_ValueError, "a sharded plan that does not fit a runner of %zd devices and "
                 "%zd outputs", nd, n);
    return NULL;
  }
  for (Py_ssize_t d = 0; d < nd; d++) {
    PyObject *per = PyTuple_GET_ITEM(out_specs, d);
    if (!PyTuple_Check(per) || PyTuple_GET_SIZE(per) != n) {
      PyErr_SetString(PyExc_ValueError, "out_specs: one tuple of outputs per device");
      return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
      PyObject *spec = PyTuple_GET_ITEM(per, k);
      if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 3) {
        PyErr_SetString(PyExc_ValueError, "out_specs: (shape, dtype, device) per output");
        return NULL;
      }
    }
  }
  for (Py_ssize_t k = 0; k < n; k++) {
    if (!PyList_Check(PyTuple_GET_ITEM(out_indices, k))) {
      PyErr_SetString(PyExc_TypeError, "out_indices: a list of blocks per output");
      return NULL;
    }
  }
  Py_ssize_t *positions = PyMem_Malloc(nd * sizeof(Py_ssize_t));
  if (positions == NULL) return PyErr_NoMemory();
  for (Py_ssize_t d = 0; d < nd; d++) {
    positions[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(order, d));
    if (positions[d] < 0 || positions[d] >= nd) {
      PyMem_Free(positions);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "order: positions 0..devices-1");
      return NULL;
    }
  }
  PyMem_Free(self->s_order);
  self->s_order = positions;
  Py_XSETREF(self->s_shardings, Py_NewRef(shardings));
  Py_XSETREF(self->s_avals, Py_NewRef(avals));
  Py_XSETREF(self->s_consts, Py_NewRef(consts));
  Py_XSETREF(self->s_out_avals, Py_NewRef(out_avals));
  Py_XSETREF(self->s_out_shardings, Py_NewRef(out_shardings));
  Py_XSETREF(self->s_out_indices, Py_NewRef(out_indices));
  Py_XSETREF(self->s_out_specs, Py_NewRef(out_specs));
  Py_XSETREF(self->s_backend, Py_NewRef(backend));
  Py_RETURN_NONE;
}

/* The live PJRT_Buffer of the Buffer `b`, or NULL (no error) if it is not one or was freed. */
static inline void *live_pointer(PyObject *b) {
  if (b == NULL || Py_TYPE(b) != buffer_type) return NULL;
  PyObject *ptr = SLOT(b, off_ptr);
  if (ptr == NULL || !PyLong_CheckExact(ptr)) return NULL;
  void *p = PyLong_AsVoidPtr(ptr);
  if (p == NULL) PyErr_Clear();
  return p;
}

/* Whether `x` is a ShardedArray laid out as operand i of the plan (its sharding and aval those
   of the plan, every shard live); its buffers' pointers go to inputs[d * count + i], device d
   taking the block at s_order[d]. 1: yes, 0: no, -1: a Python error. */
static int take_operand(Runner *self, PyObject *x, Py_ssize_t i, Py_ssize_t count,
                        void **inputs) {
  if (Py_TYPE(x) != sharded_type) return 0;
  PyObject *sharding = SLOT(x, off_sharding), *expected = PyTuple_GET_ITEM(self->s_shardings, i);
  if (sharding != expected) {
    if (sharding == NULL) return 0;
    int same = PyObject_RichCompareBool(sharding, expected, Py_EQ);
    if (same <= 0) return same;
  }
  PyObject *aval = SLOT(x, off_aval);
  expected = PyTuple_GET_ITEM(self->s_avals, i);
  if (aval != expected) {
    if (aval == NULL) return 0;
    int same = PyObject_RichCompareBool(aval, expected, Py_EQ);
    if (same <= 0) return same;
  }
  PyObject *buffers = SLOT(x, off_buffers);
  Py_ssize_t nd = self->num_devices;
  if (buffers == NULL || !PyList_CheckExact(buffers) || PyList_GET_SIZE(buffers) != nd) return 0;
  for (Py_ssize_t d = 0; d < nd; d++) {
    void *p = live_pointer(PyList_GET_ITEM(buffers, self->s_order[d]));
    if (p == NULL) return 0;
    inputs[d * count + i] = p;
  }
  return 1;
}

/* A new _BufferInfo (not yet known ready) from a (shape, dtype, device) spec. */
static PyObject *new_info(PyObject *backend, PyObject *spec) {
  PyObject *info = new_instance(info_type);
  if (info == NULL) return NULL;
  SLOT(info, off_info_backend) = Py_NewRef(backend);
  SLOT(info, off_info_shape) = Py_NewRef(PyTuple_GET_ITEM(spec, 0));
  SLOT(info, off_info_dtype) = Py_NewRef(PyTuple_GET_ITEM(spec, 1));
  SLOT(info, off_info_device) = Py_NewRef(PyTuple_GET_ITEM(spec, 2));
  SLOT(info, off_info_ready) = Py_NewRef(Py_False);
  SLOT(info, off_info_settled) = Py_NewRef(Py_None);
  return info;
}

/* call_sharded(leaves, launch_id) -> ([output ShardedArrays], [completion event per device],
   [the _BufferInfo of every output Buffer]);
   None where the plan does not cover these arguments (the general path then runs the call); or
   a failure tuple for `Executable.raise_failure` (execute error, 0, 0, [outputs to free]).

   The repeated call of a jit program over a mesh, without waiting (the caller settles the
   launch before it, under client.py's in-flight lock, and keeps the returned events for the
   next): each operand (the plan's constants, then `leaves`) must be a ShardedArray with the
   plan's sharding and aval and live shards, whose buffers then go in as they are (they were
   placed and checked when the array was made, as the general path trusts them); the outputs
   are new ShardedArrays whose Buffers turn ready on their own. */
static PyObject *Runner_call_sharded(Runner *self, PyObject *args) {
  PyObject *leaves;
  int launch_id;
  if (!PyArg_ParseTuple(args, "Oi:call_sharded", &leaves, &launch_id)) return NULL;
  if (self->s_avals == NULL || !self->has_options) {
    PyErr_SetString(PyExc_RuntimeError, "call_sharded before set_sharded_plan");
    return NULL;
  }
  PyObject *seq = PySequence_Fast(leaves, "call_sharded(leaves): a sequence");
  if (seq == NULL) return NULL;
  Py_ssize_t nd = self->num_devices, n = self->num_outputs;
  Py_ssize_t nconsts = PyTuple_GET_SIZE(self->s_consts), nleaves = PySequence_Fast_GET_SIZE(seq);
  Py_ssize_t count = nconsts + nleaves;
  Py_ssize_t per_in = count > 0 ? count : 1, per_out = n > 0 ? n : 1;
  PyObject *result = NULL;
  void **inputs = PyMem_Calloc(nd * per_in, sizeof(void *));
  void **outputs = PyMem_Calloc(nd * per_out, sizeof(void *));
  void **lists = PyMem_Calloc(2 * nd, sizeof(void *)); /* argument lists, then output lists */
  void **events = PyMem_Calloc(nd, sizeof(void *));
  if (!inputs || !outputs || !lists || !events) {
    PyErr_NoMemory();
    goto done;
  }
  if (count != PyTuple_GET_SIZE(self->s_avals)) goto miss;
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *x = i < nconsts ? PyTuple_GET_ITEM(self->s_consts, i) : items[i - nconsts];
    int ok = take_operand(self, x, i, per_in, inputs);
    if (ok < 0) goto done;
    if (!ok) goto miss;
  }
  for (Py_ssize_t d = 0; d < nd; d++) {
    lists[d] = inputs + d * per_in;
    lists[nd + d] = outputs + d * per_out;
  }
  char exec_args[TEMPLATE_MAX], options_args[TEMPLATE_MAX];
  size_t num_args = (size_t)count;
  void *argument_lists = lists, *output_lists = lists + nd, *events_address = events;
  void *options_address = options_args;
  memcpy(exec_args, self->exec_args.bytes, self->exec_args.size);
  PUT(exec_args, self->off_argument_lists, argument_lists);
  PUT(exec_args, self->off_num_args, num_args);
  PUT(exec_args, self->off_output_lists, output_lists);
  PUT(exec_args, self->off_events, events_address);
  memcpy(options_args, self->options_args.bytes, self->options_args.size);
  PUT(options_args, self->off_launch_id, launch_id);
  PUT(exec_args, self->off_options, options_address);
  void *exec_error;
  Py_BEGIN_ALLOW_THREADS exec_error = self->execute(exec_args);
  Py_END_ALLOW_THREADS if (exec_error != NULL) {
    result = Py_BuildValue("(Nii[])", PyLong_FromVoidPtr(exec_error), 0, 0);
    goto done;
  }
  /* wrap the outputs: each pointer is owned by a Buffer as soon as one is made */
  PyObject *arrays = PyList_New(n), *pending = PyList_New(nd), *infos = PyList_New(nd * n);
  Py_ssize_t owned = 0; /* outputs (in device-major order) that a Buffer owns */
  int ok = arrays != NULL && pending != NULL && infos != NULL;
  for (Py_ssize_t d = 0; ok && d < nd; d++) {
    PyObject *e = PyLong_FromVoidPtr(events[d]);
    if (e == NULL) ok = 0;
    else PyList_SET_ITEM(pending, d, e);
  }
  PyObject **made = ok ? PyMem_Calloc(nd * per_out, sizeof(PyObject *)) : NULL;
  ok = ok && made != NULL;
  for (Py_ssize_t d = 0; ok && d < nd; d++) {
    PyObject *specs = PyTuple_GET_ITEM(self->s_out_specs, d);
    for (Py_ssize_t k = 0; ok && k < n; k++) {
      PyObject *pointer = PyLong_FromVoidPtr(outputs[d * per_out + k]);
      PyObject *info = pointer ? new_info(self->s_backend, PyTuple_GET_ITEM(specs, k)) : NULL;
      PyObject *buffer = info ? new_instance(buffer_type) : NULL;
      if (buffer == NULL) {
        Py_XDECREF(pointer);
        Py_XDECREF(info);
        ok = 0;
        break;
      }
      SLOT(buffer, off_info) = info;
      SLOT(buffer, off_ptr) = pointer;
      PyList_SET_ITEM(infos, d * n + k, Py_NewRef(info));
      made[d * per_out + k] = buffer;
      owned++;
    }
  }
  for (Py_ssize_t k = 0; ok && k < n; k++) {
    PyObject *buffers = PyList_New(nd);
    PyObject *array = buffers ? new_instance(sharded_type) : NULL;
    if (array == NULL) {
      Py_XDECREF(buffers);
      ok = 0;
      break;
    }
    for (Py_ssize_t d = 0; d < nd; d++) { /* the block device d holds sits at s_order[d] */
      PyList_SET_ITEM(buffers, self->s_order[d], made[d * per_out + k]);
      made[d * per_out + k] = NULL;
    }
    SLOT(array, off_aval) = Py_NewRef(PyTuple_GET_ITEM(self->s_out_avals, k));
    SLOT(array, off_npy) = Py_NewRef(Py_None);
    SLOT(array, off_buf) = Py_NewRef(Py_None);
    SLOT(array, off_sharding) = Py_NewRef(PyTuple_GET_ITEM(self->s_out_shardings, k));
    SLOT(array, off_buffers) = buffers;
    SLOT(array, off_indices) = Py_NewRef(PyTuple_GET_ITEM(self->s_out_indices, k));
    PyList_SET_ITEM(arrays, k, array);
  }
  if (ok) {
    result = Py_BuildValue("(NNN)", arrays, pending, infos);
    arrays = pending = infos = NULL;
  } else { /* out of memory: wait for the launch, then free what no Buffer owns yet */
    PyErr_Clear();
    char event_args[TEMPLATE_MAX];
    memcpy(event_args, self->event_args.bytes, self->event_args.size);
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t d = 0; d < nd; d++) {
      PUT(event_args, self->off_event, events[d]);
      void *await_error = self->event_await(event_args);
      void *destroy_error = self->event_destroy(event_args);
      (void)await_error, (void)destroy_error; /* leaked: there is no memory to report them */
    }
    Py_END_ALLOW_THREADS
    if (made != NULL) {
      for (Py_ssize_t j = 0; j < nd * per_out; j++) Py_XDECREF(made[j]); /* frees its pointer */
    }
    PyObject *rest = PyList_New(0);
    for (Py_ssize_t d = 0; rest != NULL && d < nd; d++) {
      for (Py_ssize_t k = 0; k < n; k++) {
        if (d * per_out + k < owned && made != NULL) continue;
        PyObject *p = PyLong_FromVoidPtr(outputs[d * per_out + k]);
        if (p == NULL || PyList_Append(rest, p) < 0) Py_CLEAR(rest);
        Py_XDECREF(p);
        if (rest == NULL) break;
      }
    }
    result = rest ? Py_BuildValue("(iii N)", 0, 0, 0, rest) : NULL;
  }
  Py_XDECREF(arrays);
  Py_XDECREF(pending);
  Py_XDECREF(infos);
  PyMem_Free(made);
  goto done;
miss:
  result = Py_NewRef(Py_None);
done:
  Py_DECREF(seq);
  PyMem_Free(inputs);
  PyMem_Free(outputs);
  PyMem_Free(lists);
  PyMem_Free(events);
  return result;
}

static PyMethodDef Runner_methods[] = {
    {"settle", (PyCFunction)Runner_settle, METH_O,
     "settle(events) -> error pointers: await and destroy run_sharded's completion events"},
    {"run_sharded", (PyCFunction)Runner_run_sharded, METH_VARARGS,
     "run_sharded(lists, wait=True, launch_id=0) -> output pointers per device, or "
     "(errors..., outputs) on failure"},
    {"run", (PyCFunction)(void (*)(void))Runner_run, METH_FASTCALL,
     "run(pointers, device, window) -> output pointers, (output pointers,) when still being "
     "computed, or (errors..., outputs) on failure"},
    {"set_plan", (PyCFunction)Runner_set_plan, METH_VARARGS,
     "set_plan(avals, consts, infos, pending_infos, out_avals, device, window): what call() "
     "checks and makes"},
    {"set_sharded_plan", (PyCFunction)Runner_set_sharded_plan, METH_VARARGS,
     "set_sharded_plan(shardings, avals, consts, order, out_avals, out_shardings, out_indices, "
     "out_specs, backend): what call_sharded() checks and makes"},
    {"call_sharded", (PyCFunction)Runner_call_sharded, METH_VARARGS,
     "call_sharded(leaves, launch_id) -> (output ShardedArrays, events, infos), None (not "
     "covered), or "
     "(errors..., outputs)"},
    {"call", (PyCFunction)Runner_call, METH_O,
     "call(leaves) -> output Arrays, None (not covered), or (errors..., outputs)"},
    {NULL}};

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "revax._src.runtime._fastpath.Runner",
    .tp_basicsize = sizeof(Runner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Runs one loaded PJRT executable (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Runner_init,
    .tp_dealloc = (destructor)Runner_dealloc,
    .tp_traverse = (traverseproc)Runner_traverse,
    .tp_clear = (inquiry)Runner_clear,
    .tp_methods = Runner_methods,
};

/* ---------------------------------------------------------------- module */
static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Array, Buffer, executing_threads): read the slot offsets once"},
    {"configure_info", configure_info, METH_O,
     "configure_info(_BufferInfo): read the slot offsets a Waiter uses"},
    {"configure_sharded", configure_sharded, METH_VARARGS,
     "configure_sharded(ShardedArray, _BufferInfo): read their slot offsets once"},
    {NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fastpath",
    "revax's compiled call path (optional; see runtime/fastpath.py).", -1, module_methods};

PyMODINIT_FUNC PyInit__fastpath(void) {
  if (PyType_Ready(&RunnerType) < 0 || PyType_Ready(&FreerType) < 0 ||
      PyType_Ready(&WindowType) < 0 || PyType_Ready(&WaiterType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  if (PyModule_AddIntConstant(m, "ABI", FASTPATH_ABI) < 0 ||
      PyModule_AddObjectRef(m, "Runner", (PyObject *)&RunnerType) < 0 ||
      PyModule_AddObjectRef(m, "Freer", (PyObject *)&FreerType) < 0 ||
      PyModule_AddObjectRef(m, "Window", (PyObject *)&WindowType) < 0 ||
      PyModule_AddObjectRef(m, "Waiter", (PyObject *)&WaiterType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
