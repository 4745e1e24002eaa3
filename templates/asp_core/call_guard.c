/* asp call guards: does a call's arguments match a cached signature and binding?  And native
 * calls of compiled variants.  (C, for the dispatcher's warm path: asp_core.call_guard.)
 *
 * make_guard(checks, pairs) returns a builtin function of one argument, the call's positional
 * arguments as a tuple, answering True only when every argument passes its check and no pair
 * of arrays listed shares memory. Any doubt answers False: the caller then takes the path that
 * computes the signature in Python, which is always right. So every check here may be
 * stricter than the Python signature, never looser.
 *
 * checks: one tuple per argument, (kind, ...):
 *   (TYPE, t)                          type(v) is t
 *   (INT,)                             an exact int within int64
 *   (INT_EQ, value)                    an exact int equal to value (an int64)
 *   (FLOAT,)                           an exact float
 *   (FLOAT_EQ, value)                  an exact float equal to value
 *   (IS, object)                       v is object
 *   (ARRAY, dtype, ndim, c_contiguous, writeable, shape)
 *                                      an exact numpy.ndarray with this very dtype object,
 *                                      these flags and this shape
 * pairs: (i, j) positions of two arrays whose memory bounds must not overlap (numpy's
 * may_share_memory with its default, bounds-only, answer).
 *
 * A guard may also count the calls it vouches for (the cost model's warm path, which runs a
 * choice for a number of calls and times one in a period of them: counting there in Python
 * cost a tiny call about 70 ns, 3% of it, on the development VM). count(guard, calls, mask)
 * makes it count (calls < 0: stop counting). A counting guard answers a passing call with
 * True where nothing more is due, else with an int: the calls left after this one where this
 * one is to be timed (the count has no bit of mask set), or -1 where no call was left (the
 * dispatcher chooses again). take(guard) counts one call without checking it (a call whose
 * signature the dispatcher computed), answering as the guard would; left(guard) says how many
 * calls are left (-1: not counting).
 *
 * Plain C (no template): kept with the templates, it ships with them (setup.py) and is found
 * the same way (asp_core.templates.project_templates_dir).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { K_TYPE = 0, K_INT = 1, K_INT_EQ = 2, K_FLOAT = 3, K_FLOAT_EQ = 4, K_IS = 5, K_ARRAY = 6 };

typedef struct {
    int kind;
    PyObject *object;            /* the type, the object, or the dtype (a borrowed copy of a
                                    reference the spec tuple keeps alive) */
    long long ivalue;
    double fvalue;
    int ndim, c_contiguous, writeable;
    npy_intp shape[NPY_MAXDIMS];
} Check;

typedef struct {
    Py_ssize_t n, npairs;
    PyObject *keep;              /* the (checks, pairs) tuples: keeps the objects alive */
    Check *checks;
    Py_ssize_t *pairs;           /* 2 * npairs positions */
    int counting;                /* counts the calls it vouches for (count()) */
    long long left, mask;        /* ...the calls left, and the timing mask */
} Guard;

static void guard_free(PyObject *capsule) {
    Guard *g = (Guard *)PyCapsule_GetPointer(capsule, "asp.guard");
    if (g == NULL) { PyErr_Clear(); return; }
    Py_XDECREF(g->keep);
    PyMem_Free(g->checks);
    PyMem_Free(g->pairs);
    PyMem_Free(g);
}

/* The lowest and one past the highest byte an array's elements occupy; 0 if it has none. */
static int array_bounds(PyArrayObject *a, uintptr_t *low, uintptr_t *high) {
    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    intptr_t lo = 0, hi = 0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0) return 0;
        intptr_t span = (intptr_t)(dims[d] - 1) * (intptr_t)strides[d];
        if (span < 0) lo += span; else hi += span;
    }
    *low = (uintptr_t)PyArray_BYTES(a) + lo;
    *high = (uintptr_t)PyArray_BYTES(a) + hi + PyArray_ITEMSIZE(a);
    return 1;
}

static int passes(const Check *c, PyObject *v) {
    int overflow = 0;
    long long value;
    switch (c->kind) {
    case K_TYPE:
        return (PyObject *)Py_TYPE(v) == c->object;
    case K_IS:
        return v == c->object;
    case K_INT:
    case K_INT_EQ:
        if (!PyLong_CheckExact(v)) return 0;
        value = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (value == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
        return c->kind == K_INT || value == c->ivalue;
    case K_FLOAT:
        return PyFloat_CheckExact(v);
    case K_FLOAT_EQ:
        return PyFloat_CheckExact(v) && PyFloat_AS_DOUBLE(v) == c->fvalue;
    case K_ARRAY: {
        if (Py_TYPE(v) != &PyArray_Type) return 0;
        PyArrayObject *a = (PyArrayObject *)v;
        if ((PyObject *)PyArray_DESCR(a) != c->object || PyArray_NDIM(a) != c->ndim) return 0;
        int flags = PyArray_FLAGS(a);
        if (!!(flags & NPY_ARRAY_C_CONTIGUOUS) != c->c_contiguous ||
            !!(flags & NPY_ARRAY_WRITEABLE) != c->writeable) return 0;
        return memcmp(PyArray_DIMS(a), c->shape, sizeof(npy_intp) * c->ndim) == 0;
    }
    }
    return 0;
}

/* A passing call's answer (see the header): one call counted where the guard counts. */
static PyObject *tick(Guard *g) {
    if (!g->counting) Py_RETURN_TRUE;
    if (g->left <= 0) return PyLong_FromLong(-1);
    g->left--;
    if (g->left & g->mask) Py_RETURN_TRUE;
    return PyLong_FromLongLong(g->left);
}

static PyObject *guard_call(PyObject *capsule, PyObject *args) {
    Guard *g = (Guard *)PyCapsule_GetPointer(capsule, "asp.guard");
    if (g == NULL) return NULL;
    if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != g->n) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < g->n; i++)
        if (!passes(&g->checks[i], PyTuple_GET_ITEM(args, i))) Py_RETURN_FALSE;
    for (Py_ssize_t p = 0; p < g->npairs; p++) {
        PyObject *x = PyTuple_GET_ITEM(args, g->pairs[2 * p]);
        PyObject *y = PyTuple_GET_ITEM(args, g->pairs[2 * p + 1]);
        uintptr_t xl, xh, yl, yh;
        if (x == y) Py_RETURN_FALSE;
        if (array_bounds((PyArrayObject *)x, &xl, &xh) &&
            array_bounds((PyArrayObject *)y, &yl, &yh) && xl < yh && yl < xh)
            Py_RETURN_FALSE;
    }
    return tick(g);
}

static PyMethodDef guard_def = {"guard", guard_call, METH_O,
                                "True when the arguments (a tuple) match the guard's checks."};

/* The Guard of a guard function made by make_guard; NULL (TypeError) for anything else. */
static Guard *guard_of(PyObject *function) {
    if (!PyCFunction_Check(function) || PyCFunction_GET_FUNCTION(function) != guard_call) {
        PyErr_SetString(PyExc_TypeError, "not a call guard");
        return NULL;
    }
    return (Guard *)PyCapsule_GetPointer(PyCFunction_GET_SELF(function), "asp.guard");
}

static PyObject *guard_count(PyObject *self, PyObject *args) {
    PyObject *function;
    long long calls, mask;
    if (!PyArg_ParseTuple(args, "OLL", &function, &calls, &mask)) return NULL;
    Guard *g = guard_of(function);
    if (g == NULL) return NULL;
    if (mask < 0) {
        PyErr_SetString(PyExc_ValueError, "a negative timing mask");
        return NULL;
    }
    g->counting = calls >= 0;
    g->left = calls >= 0 ? calls : 0;
    g->mask = mask;
    Py_RETURN_NONE;
}

static PyObject *guard_take(PyObject *self, PyObject *function) {
    Guard *g = guard_of(function);
    return g == NULL ? NULL : tick(g);
}

static PyObject *guard_left(PyObject *self, PyObject *function) {
    Guard *g = guard_of(function);
    if (g == NULL) return NULL;
    return PyLong_FromLongLong(g->counting ? g->left : -1);
}

static int read_check(PyObject *item, Check *c) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 1) goto bad;
    c->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
    Py_ssize_t size = PyTuple_GET_SIZE(item);
    switch (c->kind) {
    case K_TYPE: case K_IS:
        if (size != 2) goto bad;
        c->object = PyTuple_GET_ITEM(item, 1);
        return 0;
    case K_INT: case K_FLOAT:
        return size == 1 ? 0 : -1;
    case K_INT_EQ:
        if (size != 2) goto bad;
        c->ivalue = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        return PyErr_Occurred() ? -1 : 0;
    case K_FLOAT_EQ:
        if (size != 2) goto bad;
        c->fvalue = PyFloat_AsDouble(PyTuple_GET_ITEM(item, 1));
        return PyErr_Occurred() ? -1 : 0;
    case K_ARRAY: {
        if (size != 6) goto bad;
        c->object = PyTuple_GET_ITEM(item, 1);
        if (!PyArray_DescrCheck(c->object)) goto bad;
        c->ndim = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 2));
        c->c_contiguous = PyObject_IsTrue(PyTuple_GET_ITEM(item, 3));
        c->writeable = PyObject_IsTrue(PyTuple_GET_ITEM(item, 4));
        PyObject *shape = PyTuple_GET_ITEM(item, 5);
        if (PyErr_Occurred() || c->ndim < 0 || c->ndim > NPY_MAXDIMS ||
            !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != c->ndim) goto bad;
        for (int d = 0; d < c->ndim; d++) {
            c->shape[d] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
            if (PyErr_Occurred()) return -1;
        }
        return 0;
    }
    }
bad:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed guard check");
    return -1;
}

static PyObject *make_guard(PyObject *self, PyObject *args) {
    PyObject *checks, *pairs;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &checks, &PyTuple_Type, &pairs))
        return NULL;
    Guard *g = PyMem_Calloc(1, sizeof(Guard));
    if (g == NULL) return PyErr_NoMemory();
    g->n = PyTuple_GET_SIZE(checks);
    g->npairs = PyTuple_GET_SIZE(pairs);
    g->checks = PyMem_Calloc(g->n ? g->n : 1, sizeof(Check));
    g->pairs = PyMem_Calloc(g->npairs ? 2 * g->npairs : 1, sizeof(Py_ssize_t));
    g->keep = PyTuple_Pack(2, checks, pairs);
    PyObject *capsule = NULL;
    if (g->checks == NULL || g->pairs == NULL || g->keep == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < g->n; i++)
        if (read_check(PyTuple_GET_ITEM(checks, i), &g->checks[i]) < 0) goto fail;
    for (Py_ssize_t p = 0; p < g->npairs; p++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, p);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_ValueError, "malformed guard pair");
            goto fail;
        }
        for (int k = 0; k < 2; k++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, k));
            if (PyErr_Occurred()) goto fail;
            if (at < 0 || at >= g->n || g->checks[at].kind != K_ARRAY) {
                PyErr_SetString(PyExc_ValueError, "a guard pair names an argument that is not "
                                                  "checked as an array");
                goto fail;
            }
            g->pairs[2 * p + k] = at;
        }
    }
    capsule = PyCapsule_New(g, "asp.guard", guard_free);
    if (capsule == NULL) goto fail;
    PyObject *function = PyCFunction_New(&guard_def, capsule);
    Py_DECREF(capsule);  /* the function holds it */
    return function;
fail:
    Py_XDECREF(g->keep);
    PyMem_Free(g->checks);
    PyMem_Free(g->pairs);
    PyMem_Free(g);
    return NULL;
}

/* ---- native calls of compiled variants ----------------------------------------------------
 *
 * make_caller(address, plan, ninputs, result_size, outputs) returns a builtin function of one
 * argument, the inputs tuple of a nest, that calls the variant's packed entry point (at
 * address: void entry(const asp_slot *slots, void *result)) with one slot per C argument,
 * filled as the variant's Python call function would convert them, with the GIL released as
 * cffi releases it, and each array's buffer held (as cffi's from_buffer holds it) so that no
 * other thread can free or resize an array while native code runs on it. It returns None
 * when the result record says no error and the nest has no outputs, else the record's bytes.
 *
 * plan: one tuple per C argument:
 *   (ARRAY, position)            the array's data pointer
 *   (SHAPE, position, dim)       its extent along dim
 *   (STRIDE, position, dim)      its stride along dim, in bytes
 *   (REAL, position)             float(value)
 *   (INTEGER, position, lo, hi)  int(value), which must lie in [lo, hi] (OverflowError)
 *   (TRUTH, position)            bool(value)
 *   (CONSTANT, value)            an int64
 */
enum { A_ARRAY = 0, A_SHAPE = 1, A_STRIDE = 2, A_REAL = 3, A_INTEGER = 4, A_TRUTH = 5,
       A_CONSTANT = 6 };
#define MAX_SLOTS 128
#define MAX_RESULT 4096

typedef union { void *p; int64_t i; double d; } asp_slot;
typedef void (*packed_entry)(const asp_slot *slots, void *result);

typedef struct {
    int kind, position, dim;
    long long lo, hi, value;
} Arg;

typedef struct {
    packed_entry entry;
    Py_ssize_t nargs, ninputs;
    Arg *args;
    Py_ssize_t result_size;
    int outputs;
} Caller;

static void caller_free(PyObject *capsule) {
    Caller *c = (Caller *)PyCapsule_GetPointer(capsule, "asp.caller");
    if (c == NULL) { PyErr_Clear(); return; }
    PyMem_Free(c->args);
    PyMem_Free(c);
}

static PyObject *caller_call(PyObject *capsule, PyObject *inputs) {
    Caller *c = (Caller *)PyCapsule_GetPointer(capsule, "asp.caller");
    if (c == NULL) return NULL;
    if (!PyTuple_Check(inputs) || PyTuple_GET_SIZE(inputs) != c->ninputs) {
        PyErr_SetString(PyExc_TypeError, "a native call takes the nest's inputs as a tuple");
        return NULL;
    }
    asp_slot slots[MAX_SLOTS];
    Py_buffer views[MAX_SLOTS];
    Py_ssize_t held = 0;
    union { max_align_t align; char bytes[MAX_RESULT]; } result;
    PyObject *answer = NULL;
    for (Py_ssize_t k = 0; k < c->nargs; k++) {
        const Arg *a = &c->args[k];
        PyObject *v = a->kind == A_CONSTANT ? NULL : PyTuple_GET_ITEM(inputs, a->position);
        switch (a->kind) {
        case A_ARRAY:
            if (!PyArray_Check(v)) {
                PyErr_SetString(PyExc_TypeError, "a native call was given a non-array");
                goto done;
            }
            if (PyObject_GetBuffer(v, &views[held], PyBUF_STRIDES) < 0) goto done;
            held++;
            slots[k].p = PyArray_DATA((PyArrayObject *)v);
            break;
        case A_SHAPE:
        case A_STRIDE:
            if (!PyArray_Check(v) || a->dim >= PyArray_NDIM((PyArrayObject *)v)) {
                PyErr_SetString(PyExc_TypeError, "a native call was given a non-array");
                goto done;
            }
            slots[k].i = a->kind == A_SHAPE ? PyArray_DIMS((PyArrayObject *)v)[a->dim]
                                            : PyArray_STRIDES((PyArrayObject *)v)[a->dim];
            break;
        case A_REAL:
            slots[k].d = PyFloat_AsDouble(v);
            if (slots[k].d == -1.0 && PyErr_Occurred()) goto done;
            break;
        case A_INTEGER: {
            PyObject *number = PyNumber_Long(v);
            if (number == NULL) goto done;
            int overflow = 0;
            long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
            Py_DECREF(number);
            if (value == -1 && PyErr_Occurred()) goto done;
            if (overflow || value < a->lo || value > a->hi) {
                PyErr_SetString(PyExc_OverflowError, "integer out of range for its C type");
                goto done;
            }
            slots[k].i = value;
            break;
        }
        case A_TRUTH: {
            int truth = PyObject_IsTrue(v);
            if (truth < 0) goto done;
            slots[k].i = truth;
            break;
        }
        case A_CONSTANT:
            slots[k].i = a->value;
            break;
        }
    }
    memset(result.bytes, 0, (size_t)c->result_size);
    Py_BEGIN_ALLOW_THREADS
    c->entry(slots, result.bytes);
    Py_END_ALLOW_THREADS
    if (*(int32_t *)result.bytes == 0 && !c->outputs) {
        Py_INCREF(Py_None);
        answer = Py_None;
    } else {
        answer = PyBytes_FromStringAndSize(result.bytes, c->result_size);
    }
done:
    while (held > 0) PyBuffer_Release(&views[--held]);
    return answer;
}

static PyMethodDef caller_def = {"native_call", caller_call, METH_O,
                                 "Call a compiled variant with the nest's inputs (a tuple)."};

static PyObject *make_caller(PyObject *self, PyObject *args) {
    unsigned long long address;
    PyObject *plan;
    Py_ssize_t ninputs, result_size;
    int outputs;
    if (!PyArg_ParseTuple(args, "KO!nnp", &address, &PyTuple_Type, &plan, &ninputs,
                          &result_size, &outputs))
        return NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(plan);
    if (address == 0 || nargs > MAX_SLOTS || result_size < 4 || result_size > MAX_RESULT ||
        ninputs < 0) {
        PyErr_SetString(PyExc_ValueError, "a native call that cannot be made");
        return NULL;
    }
    Caller *c = PyMem_Calloc(1, sizeof(Caller));
    if (c == NULL) return PyErr_NoMemory();
    c->args = PyMem_Calloc(nargs ? nargs : 1, sizeof(Arg));
    if (c->args == NULL) { PyMem_Free(c); return PyErr_NoMemory(); }
    c->entry = (packed_entry)(uintptr_t)address;
    c->nargs = nargs;
    c->ninputs = ninputs;
    c->result_size = result_size;
    c->outputs = outputs;
    for (Py_ssize_t k = 0; k < nargs; k++) {
        PyObject *item = PyTuple_GET_ITEM(plan, k);
        Arg *a = &c->args[k];
        a->lo = LLONG_MIN;
        a->hi = LLONG_MAX;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2) goto bad;
        a->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        long long second = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        if (PyErr_Occurred()) goto fail;
        Py_ssize_t size = PyTuple_GET_SIZE(item);
        if (a->kind == A_CONSTANT) {
            if (size != 2) goto bad;
            a->value = second;
            continue;
        }
        if (second < 0 || second >= ninputs) goto bad;
        a->position = (int)second;
        switch (a->kind) {
        case A_ARRAY: case A_REAL: case A_TRUTH:
            if (size != 2) goto bad;
            break;
        case A_SHAPE: case A_STRIDE:
            if (size != 3) goto bad;
            a->dim = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 2));
            if (PyErr_Occurred()) goto fail;
            if (a->dim < 0 || a->dim >= NPY_MAXDIMS) goto bad;
            break;
        case A_INTEGER:
            if (size != 4) goto bad;
            a->lo = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 2));
            a->hi = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 3));
            if (PyErr_Occurred()) goto fail;
            break;
        default:
            goto bad;
        }
    }
    PyObject *capsule = PyCapsule_New(c, "asp.caller", caller_free);
    if (capsule == NULL) goto fail;
    PyObject *function = PyCFunction_New(&caller_def, capsule);
    Py_DECREF(capsule);
    return function;
bad:
    PyErr_SetString(PyExc_ValueError, "malformed native call plan");
fail:
    PyMem_Free(c->args);
    PyMem_Free(c);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"count", guard_count, METH_VARARGS,
     "count(guard, calls, mask): make the guard count the calls it vouches for (see above)."},
    {"take", guard_take, METH_O, "take(guard): count one call, answering as the guard would."},
    {"left", guard_left, METH_O, "left(guard): the calls a counting guard has left, or -1."},
    {"make_caller", make_caller, METH_VARARGS,
     "make_caller(address, plan, ninputs, result_size, outputs): a native call (see above)."},
    {"make_guard", make_guard, METH_VARARGS,
     "make_guard(checks, pairs): a function of an argument tuple (see the source's header)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "asp_call_guard", "asp call guards (asp_core.call_guard)", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit_asp_call_guard(void) {
    import_array();
    return PyModule_Create(&module_def);
}
