// Code objects for a graph break (trace_api.h, GraphBreak):
//
// The transformed code of the breaking frame:
//     <prologue>; __tj_restore = compiled(<inputs>)
//     <restored locals> = __tj_restore[i] ...; <stack> = NULL | __tj_restore[j] ...
//     <the span's instructions, run by CPython>
//     per resume target: return <f>.__resume_at_<offset>_<n>(*<stack>, *<live locals>)
// and one resume function per target: a copy of the frame's code whose
// parameters are the stack values and the live locals at the target (the
// frame's first local before them where super() may read it), and
// whose prologue pushes those values and jumps there. The frame hook traces
// resume functions like any frame; they may break again.
#pragma once

#include <vector>

#include "support/expected.h"
#include "support/py_ref.h"
#include "tracer/source.h"
#include "tracer/trace_api.h"

namespace tj::tracer {

// A resume function's first parameter when the frame's first local, read
// by a zero-argument super(), is a cell of the frame: that cell's value at
// the break (resume.cpp, super_self).
inline constexpr const char* kSuperSelf = "___super_self";

// make_break_code, is_resume_code and kResumeMarker are declared in
// trace_api.h (the runtime calls them).

// The resume function's code for one target (exposed for tests); `number`
// is the <n> of its qualified name.
Expected<PyRef> make_resume_code(PyCodeObject* original, const ResumeTarget& target, int number);

}  // namespace tj::tracer
