// The CPU autocast family of the tracer, as free functions over a
// TraceContext (trace_context.h): torch.autocast objects made, entered and
// left in traced code, the state queries, and the real __enter__/__exit__
// calls replayed after the graph (translate_autocast.cpp; the casts of an
// op's arguments are torch_ops.h's autocast_casts). The `with` statement
// itself (BEFORE_WITH, which manager is which) stays in translate_with.cpp.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracer/trace_context.h"
#include "tracer/trace_state.h"

namespace tj::tracer {

// torch.autocast(...) / torch.cpu.amp.autocast(...) of constant arguments
// (`cls` borrowed): the object its __init__ makes (null + unsupported).
ValuePtr make_autocast(TraceContext cx, PyObject* cls, const std::vector<ValuePtr>& args,
                       const std::vector<std::pair<std::string, ValuePtr>>& kwargs);
// torch.is_autocast_cpu_enabled() / torch.get_autocast_cpu_dtype() (`fn`
// borrowed) answered from the traced code's state; null for any other call.
ValuePtr autocast_query(TraceContext cx, PyObject* fn, const std::vector<ValuePtr>& args,
                        const std::vector<std::pair<std::string, ValuePtr>>& kwargs);
// BEFORE_WITH of a torch.autocast `manager`: guards the attributes of one
// made outside the frame; the state it enters (nullopt when it is for
// another device, or with the failure set).
std::optional<AutocastState> autocast_entry_state(TraceContext cx, const ValuePtr& manager);
// Enters `target` as the block of `manager` (borrowed).
void enter_autocast(TraceContext cx, PyObject* manager, const AutocastState& target);
// The traced __exit__ of a torch.autocast block: false with the failure set.
bool exit_autocast(TraceContext cx, PyObject* manager);
// The real __enter__/__exit__ calls of autocast blocks the runtime
// replays after the graph, as side effects.
void add_autocast_side_effects(TraceContext cx);

}  // namespace tj::tracer
