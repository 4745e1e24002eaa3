/* The cold gate: a kernel method's entry point in C, for the calls that run its original code
 * before any analysis (specializers/loopnest/coldstart.py explains when they do).
 *
 * A process's first call of a kernel on small data runs the original Python method; in Python,
 * the dispatcher's own first execution (its wrapper, the work estimate, the timing) cost about
 * 13 us here, more than the original code of a small call (vadd on 16 elements: 11 us). The
 * gate takes those calls in C: it reads the cold start's state (``ColdStart``: the analysis
 * cost, the time spent so far, the per-depth iteration costs), estimates the call's work as
 * ``coldstart.work_hint`` does, and where the call stays cold runs the original method, timed,
 * adding its time to the cold start. Every other call, and any call it is not sure of (keyword
 * arguments, an argument of a type that might be a Dask collection, an integer beyond 64 bits,
 * an instance without ``_asp_cold_ok``), goes to the Python dispatcher unchanged, which decides
 * again from scratch: the gate only ever takes the calls Python's ``stays_cold`` would take
 * cold, and takes them exactly as ``ColdStart.run`` does.
 *
 * The gate is a descriptor, like a function: ``Class.kernel`` is the gate, ``instance.kernel``
 * a bound method of it; calls come by vectorcall, so a warm call pays one C call more than the
 * Python dispatcher alone. Its ``__dict__`` holds what ``functools.update_wrapper`` copies
 * (``__wrapped__``, ``__name__``, ``__doc__``...).
 *
 * Built by setup.py as an optional extension (only the CPython API: no NumPy headers); where it
 * is not built, ``coldstart.gate`` returns the Python dispatcher itself.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <time.h>

/* Raised with any change to the gate's contract with coldstart.py: a stale build (an editable
 * install not rebuilt) is then refused, and the Python dispatcher used. */
#define GATE_ABI 1

typedef struct {
    PyObject_HEAD
    PyObject *original;    /* the kernel method as written */
    PyObject *dispatch;    /* the Python dispatcher: (self, *args, **kwargs) */
    PyObject *table;       /* coldstart's dict: original -> ColdStart, while it is cold */
    PyObject *analysed;    /* a list whose item 0 says whether this process analysed a kernel */
    PyObject *ndarray;     /* numpy.ndarray */
    PyObject *skipped;     /* frozenset of the types no Dask test is needed for */
    PyObject *marker;      /* the value ``_asp_current`` takes for a cold call */
    double first_analysis_s;
    Py_ssize_t own_attributes;  /* LoopKernel's own attributes: no array among so many */
    PyObject *dict;
    vectorcallfunc vectorcall;
} Gate;

static PyObject *one;   /* 1 */
static PyObject *s_cold_ok, *s_current, *s_analysis_s, *s_levels, *s_spent, *s_calls,
    *s_size, *s_shape;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);   /* time.perf_counter's clock on Linux */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work estimate state, as coldstart.work_hint keeps it. */
typedef struct {
    long long largest, smallest, longest;
    PyObject *shape, *small;    /* borrowed from the arrays (alive during the call) */
} Extents;

/* One value: 0 looked at, 1 not sure (the Python path decides), -1 error. */
static int look(Gate *g, PyObject *value, Extents *e, PyObject *owned)
{
    PyTypeObject *kind = Py_TYPE(value);
    if ((PyObject *)kind == g->ndarray) {
        PyObject *size_obj = PyObject_GetAttr(value, s_size);
        if (size_obj == NULL)
            return -1;
        long long size = PyLong_AsLongLong(size_obj);
        Py_DECREF(size_obj);
        if (size == -1 && PyErr_Occurred())
            return -1;
        int larger = size > e->largest;
        int smaller = 1 < size && (e->smallest == 1 || size < e->smallest);
        if (larger || smaller) {
            PyObject *shape = PyObject_GetAttr(value, s_shape);
            if (shape == NULL)
                return -1;
            if (!PyTuple_CheckExact(shape)) {
                Py_DECREF(shape);
                return 1;
            }
            /* keep a reference in the owned list (shapes are new tuples) */
            if (PyList_Append(owned, shape) < 0) {
                Py_DECREF(shape);
                return -1;
            }
            Py_DECREF(shape);
            if (larger) {
                e->largest = size;
                e->shape = PyTuple_GET_SIZE(shape) ? shape : NULL;
            }
            if (smaller) {
                e->smallest = size;
                e->small = shape;
            }
        }
        return 0;
    }
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow)
            return 1;
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v > e->longest)
            e->longest = v;
        return 0;
    }
    int plain = PySet_Contains(g->skipped, (PyObject *)kind);
    if (plain < 0)
        return -1;
    return plain ? 0 : 1;
}

static int extent(PyObject *shape, Py_ssize_t i, long long *out)
{
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* coldstart.work_hint over positional arguments and (where the instance has more attributes
 * than LoopKernel's own) the instance's attributes: 0 with *work set, 1 not sure, -1 error. */
static int work_hint(Gate *g, PyObject *const *args, Py_ssize_t nargs, PyObject *attributes,
                     PyObject *levels, double *work)
{
    Extents e = {0, 1, 0, NULL, NULL};
    PyObject *owned = PyList_New(0);
    if (owned == NULL)
        return -1;
    int status = 0;
    for (Py_ssize_t i = 0; i < nargs && status == 0; i++)
        status = look(g, args[i], &e, owned);
    if (status == 0 && attributes != NULL && PyDict_GET_SIZE(attributes) > g->own_attributes) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (status == 0 && PyDict_Next(attributes, &pos, &key, &value))
            status = look(g, value, &e, owned);
    }
    if (status != 0)
        goto done;
    /* without an array, the largest int argument is every loop's extent */
    Py_ssize_t dims, small_dims;
    if (!e.largest) {
        dims = small_dims = 1;
    } else {
        dims = e.shape ? PyTuple_GET_SIZE(e.shape) : 1;
        small_dims = e.small ? PyTuple_GET_SIZE(e.small) : 1;
    }
    double total = 0.0;
    long long iterations = 0;
    Py_ssize_t count = PyTuple_GET_SIZE(levels);
    for (Py_ssize_t depth = 0; depth < count; depth++) {
        double seconds = PyFloat_AsDouble(PyTuple_GET_ITEM(levels, depth));
        if (seconds == -1.0 && PyErr_Occurred()) {
            status = -1;
            goto done;
        }
        long long factor;
        int multiply = 1;
        if (!e.largest) {
            /* shape == small == (longest,) */
            factor = e.longest;
            if (depth == 0)
                multiply = 0;
        } else if (depth < dims) {
            if (e.shape == NULL)
                factor = 1;    /* a 0-d array: shape taken as (1,) */
            else if (extent(e.shape, depth, &factor) < 0) {
                status = -1;
                goto done;
            }
            if (depth == 0)
                multiply = 0;
        } else if (depth - dims < small_dims) {
            if (e.small == NULL)
                factor = 1;
            else if (extent(e.small, depth - dims, &factor) < 0) {
                status = -1;
                goto done;
            }
        } else {
            Py_ssize_t at = (depth - dims - small_dims) % dims;
            if (e.shape == NULL)
                factor = 1;
            else if (extent(e.shape, at, &factor) < 0) {
                status = -1;
                goto done;
            }
        }
        if (!multiply)
            iterations = factor;
        else if (__builtin_mul_overflow(iterations, factor, &iterations)) {
            status = 1;    /* beyond 64 bits: far from cold; Python decides */
            goto done;
        }
        total += seconds * (double)iterations;
    }
    *work = total;
done:
    Py_DECREF(owned);
    return status;
}

static double float_attribute(PyObject *obj, PyObject *name, int *failed)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        *failed = 1;
        return 0.0;
    }
    double d = PyFloat_AsDouble(value);
    Py_DECREF(value);
    if (d == -1.0 && PyErr_Occurred())
        *failed = 1;
    return d;
}

/* ColdStart.run's bookkeeping: spent += seconds, calls += 1 (an exception in flight kept). */
static int account(PyObject *cold, double seconds)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int failed = 0;
    double spent = float_attribute(cold, s_spent, &failed);
    int status = -1;
    if (!failed) {
        PyObject *total = PyFloat_FromDouble(spent + seconds);
        if (total != NULL) {
            status = PyObject_SetAttr(cold, s_spent, total);
            Py_DECREF(total);
        }
    }
    if (status == 0) {
        PyObject *calls = PyObject_GetAttr(cold, s_calls);
        PyObject *more = calls ? PyNumber_Add(calls, one) : NULL;
        Py_XDECREF(calls);
        status = more ? PyObject_SetAttr(cold, s_calls, more) : -1;
        Py_XDECREF(more);
    }
    if (type != NULL) {
        if (status < 0)
            PyErr_Clear();   /* the call's own exception wins */
        PyErr_Restore(type, value, tb);
    }
    return status;
}

/* 1: the call stays cold (*cold_out borrowed), 0: the Python dispatcher takes it, -1: error. */
static int stays_cold(Gate *g, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      PyObject **cold_out)
{
    if (nargs < 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)))
        return 0;
    PyObject *cold = PyDict_GetItemWithError(g->table, g->original);
    if (cold == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *owner = args[0];
    PyObject *attributes = PyObject_GenericGetDict(owner, NULL);
    if (attributes == NULL) {
        PyErr_Clear();
        return 0;
    }
    int result = 0;
    PyObject *allowed = PyDict_GetItemWithError(attributes, s_cold_ok);
    if (allowed != Py_True) {   /* not allowed, or not set: Python says which */
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    PyObject *levels = PyObject_GetAttr(cold, s_levels);
    if (levels == NULL) {
        result = -1;
        goto done;
    }
    if (!PyTuple_CheckExact(levels)) {
        Py_DECREF(levels);
        goto done;
    }
    double work;
    int hint = work_hint(g, args + 1, nargs - 1, attributes, levels, &work);
    Py_DECREF(levels);
    if (hint != 0) {
        result = hint < 0 ? -1 : 0;
        goto done;
    }
    int failed = 0;
    double analysis_s = float_attribute(cold, s_analysis_s, &failed);
    double spent = failed ? 0.0 : float_attribute(cold, s_spent, &failed);
    if (failed) {
        result = -1;
        goto done;
    }
    double limit = analysis_s;
    if (PyList_GET_SIZE(g->analysed) < 1 || PyList_GET_ITEM(g->analysed, 0) != Py_True)
        limit += g->first_analysis_s;
    if (spent + work < limit) {
        *cold_out = cold;
        result = 1;
    }
done:
    Py_DECREF(attributes);
    return result;
}

static PyObject *gate_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    Gate *g = (Gate *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *cold = NULL;
    int cold_call = stays_cold(g, args, nargs, kwnames, &cold);
    if (cold_call < 0)
        return NULL;
    if (!cold_call)
        return PyObject_Vectorcall(g->dispatch, args, nargsf, kwnames);
    Py_INCREF(cold);   /* (a call inside may take it out of the table) */
    if (PyObject_SetAttr(args[0], s_current, g->marker) < 0) {
        Py_DECREF(cold);
        return NULL;
    }
    double started = now();
    PyObject *result = PyObject_Vectorcall(g->original, args, nargsf, kwnames);
    if (account(cold, now() - started) < 0) {
        Py_CLEAR(result);
    }
    Py_DECREF(cold);
    return result;
}

static PyObject *gate_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static int gate_traverse(Gate *g, visitproc visit, void *arg)
{
    Py_VISIT(g->original);
    Py_VISIT(g->dispatch);
    Py_VISIT(g->table);
    Py_VISIT(g->analysed);
    Py_VISIT(g->ndarray);
    Py_VISIT(g->skipped);
    Py_VISIT(g->marker);
    Py_VISIT(g->dict);
    return 0;
}

static int gate_clear(Gate *g)
{
    Py_CLEAR(g->original);
    Py_CLEAR(g->dispatch);
    Py_CLEAR(g->table);
    Py_CLEAR(g->analysed);
    Py_CLEAR(g->ndarray);
    Py_CLEAR(g->skipped);
    Py_CLEAR(g->marker);
    Py_CLEAR(g->dict);
    return 0;
}

static void gate_dealloc(Gate *g)
{
    PyObject_GC_UnTrack(g);
    gate_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static int gate_init(Gate *g, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"original", "dispatch", "table", "analysed", "ndarray", "skipped",
                            "marker", "first_analysis_s", "own_attributes", NULL};
    PyObject *original, *dispatch, *table, *analysed, *ndarray, *skipped, *marker;
    double first_analysis_s;
    Py_ssize_t own_attributes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O!O!O!Odn", names, &original,
                                     &dispatch, &PyDict_Type, &table, &PyList_Type, &analysed,
                                     &PyType_Type, &ndarray, &PyFrozenSet_Type, &skipped,
                                     &marker, &first_analysis_s, &own_attributes))
        return -1;
    if (!PyCallable_Check(original) || !PyCallable_Check(dispatch)) {
        PyErr_SetString(PyExc_TypeError, "original and dispatch must be callable");
        return -1;
    }
    PyObject *old[] = {g->original, g->dispatch, g->table, g->analysed, g->ndarray, g->skipped,
                       g->marker};
    Py_INCREF(original);
    g->original = original;
    Py_INCREF(dispatch);
    g->dispatch = dispatch;
    Py_INCREF(table);
    g->table = table;
    Py_INCREF(analysed);
    g->analysed = analysed;
    Py_INCREF(ndarray);
    g->ndarray = ndarray;
    Py_INCREF(skipped);
    g->skipped = skipped;
    Py_INCREF(marker);
    g->marker = marker;
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        Py_XDECREF(old[i]);
    g->first_analysis_s = first_analysis_s;
    g->own_attributes = own_attributes;
    g->vectorcall = gate_vectorcall;
    return 0;
}

static PyObject *gate_repr(Gate *g)
{
    return PyUnicode_FromFormat("<cold gate of %R>", g->original);
}

/* The work estimate alone, for tests against coldstart.work_hint: None where the gate would
 * hand the call to Python. */
static PyObject *gate_work_hint(Gate *g, PyObject *args)
{
    PyObject *owner, *call_args, *levels;
    if (!PyArg_ParseTuple(args, "OO!O!", &owner, &PyTuple_Type, &call_args, &PyTuple_Type,
                          &levels))
        return NULL;
    PyObject *attributes = PyObject_GenericGetDict(owner, NULL);
    if (attributes == NULL)
        PyErr_Clear();
    double work;
    int status = work_hint(g, &PyTuple_GET_ITEM(call_args, 0), PyTuple_GET_SIZE(call_args),
                           attributes, levels, &work);
    Py_XDECREF(attributes);
    if (status < 0)
        return NULL;
    if (status > 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(work);
}

static PyMethodDef gate_methods[] = {
    {"work_hint", (PyCFunction)gate_work_hint, METH_VARARGS,
     "work_hint(owner, args, levels): coldstart.work_hint as the gate computes it, or None "
     "where the gate leaves the call to the Python dispatcher."},
    {NULL}};

static PyGetSetDef gate_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}};

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "specializers.loopnest._coldgate.Gate",
    .tp_doc = "A kernel method's entry point: its cold calls in C, the others to Python.",
    .tp_basicsize = sizeof(Gate),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)gate_init,
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_traverse = (traverseproc)gate_traverse,
    .tp_clear = (inquiry)gate_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Gate, vectorcall),
    .tp_descr_get = gate_descr_get,
    .tp_dictoffset = offsetof(Gate, dict),
    .tp_repr = (reprfunc)gate_repr,
    .tp_methods = gate_methods,
    .tp_getset = gate_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_coldgate",
    .m_doc = "The cold gate: a kernel method's cold calls in C (see coldstart.gate).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__coldgate(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&s_cold_ok, "_asp_cold_ok"}, {&s_current, "_asp_current"},
                 {&s_analysis_s, "analysis_s"}, {&s_levels, "levels"}, {&s_spent, "spent"},
                 {&s_calls, "calls"}, {&s_size, "size"}, {&s_shape, "shape"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if ((one = PyLong_FromLong(1)) == NULL)
        return NULL;
    if (PyType_Ready(&GateType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", GATE_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&GateType);
    if (PyModule_AddObject(m, "Gate", (PyObject *)&GateType) < 0) {
        Py_DECREF(&GateType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
