/* The PEP 523 frame hook for CPython 3.11. See eval_frame.h for the
 * contract. Three exits: run the frame as it is, run a transformed code
 * object in its place, or fail with the callback's error. */
#include "runtime/eval_frame.h"

#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

#include <string.h>

static tj_FrameCallback g_callback = NULL;
static _PyFrameEvalFunction g_previous_eval = NULL;
static int g_installed = 0;
static Py_ssize_t g_extra_index = -1;
static void* g_default_options = NULL;
static unsigned long long g_callback_calls = 0;

static _Thread_local tj_ActiveState t_active = {0, NULL};
static _Thread_local int t_in_callback = 0;
/* The transformed code whose frame asked to be run again as the original
 * (compared, never dereferenced). */
static _Thread_local PyObject* t_rerun_code = NULL;

void tj_request_rerun(PyObject* transformed_code) { t_rerun_code = transformed_code; }

/* The same for the line of a failed graph op (tj_set_failure_line). */
static _Thread_local PyObject* t_failure_code = NULL;
static _Thread_local int t_failure_line = -1;

void tj_set_failure_line(PyObject* transformed_code, int line) {
  t_failure_code = transformed_code;
  t_failure_line = line;
}

/* The error leaving `transformed`: its own traceback entry (the first)
 * shows `line`, without column carets (they belonged to the graph call). */
static void show_failure_line(PyObject* transformed, int line) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (tb != NULL && PyTraceBack_Check(tb)) {
    PyTracebackObject* first = (PyTracebackObject*)tb;
    PyCodeObject* code = first->tb_frame ? PyFrame_GetCode(first->tb_frame) : NULL;
    if ((PyObject*)code == transformed) {
      PyObject* next = first->tb_next ? (PyObject*)first->tb_next : Py_None;
      PyObject* moved = PyObject_CallFunction((PyObject*)&PyTraceBack_Type, "OOii", next, (PyObject*)first->tb_frame,
                                              -1, line);
      if (moved != NULL) {
        Py_DECREF(tb);
        tb = moved;
      } else {
        PyErr_Clear(); /* best effort: the traceback stays as it was */
      }
    }
    Py_XDECREF(code);
  }
  PyErr_Restore(type, value, tb);
}

void* tj_active_options(void) {
  return t_active.is_set ? t_active.options : g_default_options;
}

tj_ActiveState tj_set_active(void* options) {
  tj_ActiveState previous = t_active;
  t_active.is_set = 1;
  t_active.options = options;
  return previous;
}

void tj_restore_active(tj_ActiveState previous) { t_active = previous; }

void tj_set_default_options(void* options) { g_default_options = options; }

Py_ssize_t tj_code_extra_index(void) { return g_extra_index; }

unsigned long long tj_hook_callback_calls(void) { return g_callback_calls; }

static PyObject* run_default(PyThreadState* tstate, _PyInterpreterFrame* frame, int throw_flag) {
  if (g_previous_eval != NULL) return g_previous_eval(tstate, frame, throw_flag);
  return _PyEval_EvalFrameDefault(tstate, frame, throw_flag);
}

/* Runs `code` as a fresh function over the frame's argument slots. */
static PyObject* run_transformed(_PyInterpreterFrame* frame, PyCodeObject* code) {
  PyObject* fn = PyFunction_New((PyObject*)code, frame->f_globals);
  if (fn == NULL) return NULL;
  PyObject* closure = frame->f_func->func_closure;
  if (closure != NULL && PyFunction_SetClosure(fn, closure) < 0) {
    Py_DECREF(fn);
    return NULL;
  }
  Py_ssize_t nargs = code->co_argcount;
  PyObject* result = PyObject_Vectorcall(fn, frame->localsplus, (size_t)nargs, NULL);
  Py_DECREF(fn);
  return result;
}

/* Whether `inner` is a resume function continuing the function `outer`
 * runs (tracer/resume.h: same co_name and file, qualname marked). */
static int is_resume_of(PyCodeObject* inner, PyCodeObject* outer) {
  const char* qual = PyUnicode_AsUTF8(inner->co_qualname);
  if (qual == NULL) {
    PyErr_Clear(); /* best effort: a traceback left as it is */
    return 0;
  }
  return strstr(qual, "__resume_at_") != NULL && PyUnicode_Compare(inner->co_name, outer->co_name) == 0 &&
         PyUnicode_Compare(inner->co_filename, outer->co_filename) == 0;
}

/* An exception leaving the transformed code `transformed` through a resume
 * function it called: the traceback keeps one entry for the user's function,
 * the innermost (the resume function's, at the user's line), as python3.11
 * shows one frame per call. Repeated at every level, a chain of resume
 * functions (a break in a loop) reads as one frame. */
static void drop_resume_caller_entry(PyObject* transformed) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (tb != NULL && PyTraceBack_Check(tb)) {
    PyTracebackObject* first = (PyTracebackObject*)tb;
    PyTracebackObject* next = first->tb_next;
    if (first->tb_frame != NULL && next != NULL && next->tb_frame != NULL) {
      PyCodeObject* outer = PyFrame_GetCode(first->tb_frame);
      PyCodeObject* inner = PyFrame_GetCode(next->tb_frame);
      if ((PyObject*)outer == transformed && is_resume_of(inner, outer)) {
        Py_INCREF(next);
        Py_DECREF(tb);
        tb = (PyObject*)next;
      }
      Py_DECREF(outer);
      Py_DECREF(inner);
    }
  }
  PyErr_Restore(type, value, tb);
}

static PyObject* tj_eval_frame(PyThreadState* tstate, _PyInterpreterFrame* frame, int throw_flag) {
  void* options = tj_active_options();
  PyCodeObject* code = frame->f_code;
  if (options == NULL || throw_flag || t_in_callback ||
      (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) ||
      !(code->co_flags & CO_OPTIMIZED) || frame->owner != FRAME_OWNED_BY_THREAD ||
      frame->f_func == NULL) {
    return run_default(tstate, frame, throw_flag);
  }

  tj_FrameView view;
  view.code = code;
  view.func = (PyObject*)frame->f_func;
  view.globals = frame->f_globals;
  view.builtins = frame->f_builtins;
  view.localsplus = frame->localsplus;
  view.extra = NULL;
  if (_PyCode_GetExtra((PyObject*)code, g_extra_index, &view.extra) < 0) {
    PyErr_Clear(); /* only a bad index fails (SystemError): no cache state */
    view.extra = NULL;
  }

  ++g_callback_calls;
  t_in_callback = 1;
  tj_ActiveState saved = t_active;
  t_active.is_set = 1;
  t_active.options = NULL;
  PyObject* transformed = g_callback(&view, options);
  t_active = saved;
  t_in_callback = 0;

  if (transformed == NULL) {
    if (PyErr_Occurred()) return NULL;
    return run_default(tstate, frame, throw_flag);
  }
  /* A rerun request is made and consumed within one transformed run: one
   * pending outside (Python code run while an exception unwinds) is kept
   * for its own frame, and none outlives this run. */
  PyObject* outer_request = t_rerun_code;
  PyObject* outer_failure_code = t_failure_code;
  int outer_failure_line = t_failure_line;
  t_rerun_code = NULL;
  t_failure_code = NULL;
  PyObject* result = run_transformed(frame, (PyCodeObject*)transformed);
  int rerun = t_rerun_code == transformed;
  int failure_line = t_failure_code == transformed ? t_failure_line : -1;
  t_rerun_code = outer_request;
  t_failure_code = outer_failure_code;
  t_failure_line = outer_failure_line;
  if (result == NULL && !rerun) drop_resume_caller_entry(transformed);
  if (result == NULL && !rerun && failure_line > 0) show_failure_line(transformed, failure_line);
  Py_DECREF(transformed);
  if (result == NULL && rerun) {
    /* The graph failed before anything observable happened (see
     * tj_request_rerun): the original frame, never started, runs as it is
     * and raises (or catches) eager's own exception at the user's line,
     * so the graph's error, whatever it is, is dropped on purpose. */
    PyErr_Clear();
    return run_default(tstate, frame, throw_flag);
  }
  return result;
}

int tj_hook_install(tj_FrameCallback cb, freefunc free_extra) {
  g_callback = cb;
  if (g_extra_index < 0) {
    g_extra_index = _PyEval_RequestCodeExtraIndex(free_extra);
    if (g_extra_index < 0) {
      PyErr_SetString(PyExc_RuntimeError, "tracejit: no code-extra index left");
      return -1;
    }
  }
  if (g_installed) return 0;
  PyInterpreterState* interp = PyThreadState_GET()->interp;
  _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
  g_previous_eval = current == _PyEval_EvalFrameDefault ? NULL : current;
  _PyInterpreterState_SetEvalFrameFunc(interp, tj_eval_frame);
  g_installed = 1;
  return 0;
}

void tj_hook_uninstall(void) {
  if (!g_installed) return;
  PyInterpreterState* interp = PyThreadState_GET()->interp;
  _PyInterpreterState_SetEvalFrameFunc(interp, g_previous_eval ? g_previous_eval : _PyEval_EvalFrameDefault);
  g_previous_eval = NULL;
  g_installed = 0;
}

int tj_hook_installed(void) { return g_installed; }
