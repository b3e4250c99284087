/* The PEP 523 frame hook: the only place that touches CPython 3.11 frame
 * internals (like TorchDynamo's eval_frame.c).
 *
 * Contract. While installed, every frame evaluation goes through
 * tj_eval_frame(). A frame is handed to the C++ callback only when
 *   - compilation is active on this thread (tj_active_options() != NULL),
 *   - it is not a generator/coroutine frame, a re-entry (throw_flag), or a
 *     module/class body (no fast locals), and
 *   - we are not already inside the callback on this thread.
 * The callback sees a read-only view of the frame and the code object's
 * extra slot (a per-code cache, stored with _PyCode_SetExtra). It returns
 *   - NULL, no error: run the frame unchanged;
 *   - NULL, error set: raise it from the call site;
 *   - a new reference to a code object: run that instead, as a new function
 *     (same globals, the original's closure) called with the frame's
 *     argument slots positionally. The callback must have made the code's
 *     signature all-positional and marked it so that the callback lets its
 *     own frame through.
 * The original frame is then never started; CPython's caller pops it
 * (unless the transformed code fails and asked for a rerun, see
 * tj_request_rerun: then the original frame runs unchanged).
 * While the callback runs, compilation is inactive on the thread, so Python
 * code it calls is not traced (re-entrancy).
 */
#ifndef TRACEJIT_RUNTIME_EVAL_FRAME_H
#define TRACEJIT_RUNTIME_EVAL_FRAME_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_FrameView {
  PyCodeObject* code;            /* borrowed */
  PyObject* func;                /* borrowed: the PyFunctionObject */
  PyObject* globals;             /* borrowed */
  PyObject* builtins;            /* borrowed */
  PyObject* const* localsplus;   /* borrowed: co_nlocalsplus slots, may hold NULL */
  void* extra;                   /* the code object's extra slot (NULL when unset) */
} tj_FrameView;

typedef PyObject* (*tj_FrameCallback)(const tj_FrameView* frame, void* options);

/* Installs the hook with `cb` (replacing a previous callback), remembering
 * the interpreter's previous eval-frame function. Returns 0, or -1 with a
 * Python error set when the code-extra index cannot be had. */
int tj_hook_install(tj_FrameCallback cb, freefunc free_extra);
/* Restores the eval-frame function that was there before install. */
void tj_hook_uninstall(void);
int tj_hook_installed(void);

/* The index of our slot in co_extra (valid after install). */
Py_ssize_t tj_code_extra_index(void);

/* Which compile options are active on this thread: the thread's own value
 * when it set one (CompiledFunction calls, tracejit.disable), otherwise the
 * process default (--compile-all). NULL means "run everything unchanged". */
typedef struct tj_ActiveState {
  int is_set;
  void* options;
} tj_ActiveState;
void* tj_active_options(void);
tj_ActiveState tj_set_active(void* options); /* returns the previous state */
void tj_restore_active(tj_ActiveState previous);
void tj_set_default_options(void* options);

/* Called (with an error set) by a compiled graph that failed before its
 * frame did anything observable: no Python side effect replayed yet, no
 * input tensor written, no random number drawn. When the exception leaves
 * the transformed code `transformed_code` (borrowed, only compared), the
 * hook drops it and runs the original frame unchanged instead, so the
 * program does exactly what eager does: side effects before the failing op,
 * the user's own try/except, eager's exception from the user's line. */
void tj_request_rerun(PyObject* transformed_code);

/* Called (with an error set) by a compiled graph that failed and is not
 * rerun, when it knows the user's line of the failing op: the traceback
 * entry of the transformed code `transformed_code` (borrowed, only
 * compared) then shows `line` instead of the function's first line. */
void tj_set_failure_line(PyObject* transformed_code, int line);

/* How many frames the callback has been asked about (for tests). */
unsigned long long tj_hook_callback_calls(void);

#ifdef __cplusplus
}
#endif

#endif
