// Runtime checks: a branch on tensor data whose one side only raises
// (issue 42: torch.distributions' argument validation, on by default,
// `valid = constraint.check(value); if not valid.all(): raise ValueError(...)`
// in Distribution.__init__ and _validate_sample).
//
// Without this such a branch breaks the graph, once per check: a PPO step
// with two distributions made three graphs. Here the trace goes on along
// the side that does not raise, and the condition becomes a `check` side
// effect: the graph computes it as an output, and the runtime (replay in
// runtime/output_rebuild.cpp) tests its truth after the graph has run, in
// program order with the frame's other side effects, raising the
// exception class the raising side names when it would have been taken.
// Side effects that come later in the frame (attribute writes, warnings)
// are then not replayed, as in eager; the operations of the graph after
// the check have run (docs/api.md says so). The exception's message is the
// check's source line and location (eager's message formats the values).
//
// Taken only when it is exact: the condition is one element (bool() of a
// bigger tensor raises in eager), the raising side is a straight run of
// loads, calls and string building that ends in `raise X(...)` of a
// constant exception class, and no enclosing try block (in this frame or
// an inlining caller) could catch it. Anything else keeps the graph break.
#include <algorithm>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// Whether the instructions from `begin` are a straight run that only
// builds and raises an exception (`raise Cls(f"...")`); the RAISE_VARARGS.
const bc::Instruction* raising_run(const bc::DecodedCode& code, size_t begin) {
  using O = bc::Opcode;
  for (size_t i = begin; i < code.instructions.size() && i < begin + 128; ++i) {
    const bc::Instruction& inst = *code.instructions[i];
    if (i > begin && inst.is_jump_target) return nullptr;  // another path joins: not only the raise
    switch (inst.code()) {
      case O::RAISE_VARARGS: return inst.arg == 1 ? &inst : nullptr;
      case O::LOAD_GLOBAL:
        if (i == begin) continue;
        [[fallthrough]];
      case O::LOAD_CONST:
      case O::LOAD_FAST:
      case O::LOAD_DEREF:
      case O::LOAD_ATTR:
      case O::LOAD_METHOD:
      case O::PRECALL:
      case O::CALL:
      case O::KW_NAMES:
      case O::PUSH_NULL:
      case O::FORMAT_VALUE:
      case O::BUILD_STRING:
      case O::BUILD_TUPLE:
      case O::BINARY_OP:
      case O::NOP: continue;
      default: return nullptr;
    }
  }
  return nullptr;
}

}  // namespace

bool InstructionTranslator::runtime_check_branch(const bc::Instruction& inst, const ValuePtr& cond, bool& handled) {
  handled = false;
  const bc::JumpCondition condition = inst.info().condition;
  if (condition != bc::JumpCondition::if_true && condition != bc::JumpCondition::if_false) return true;
  if (!cond || cond->kind != ValueKind::tensor || is_python_number(cond) || !cond->node) return true;
  const auto& sizes = cond->meta().sizes;
  if (!std::all_of(sizes.begin(), sizes.end(), [](int64_t s) { return s == 1; })) return true;
  const int here = code_->index_of(&inst);
  if (here < 0 || !inst.target) return true;
  const int target = code_->index_of(inst.target);
  if (target < 0) return true;
  const bool jump_when = condition == bc::JumpCondition::if_true;
  // Which side raises: the jump's target, or the instruction after the jump.
  size_t raise_begin = 0;
  bool raise_when = false;  // the condition's truth that takes the raising side
  const bc::Instruction* raise_inst = nullptr;
  if ((raise_inst = raising_run(*code_, static_cast<size_t>(here) + 1))) {
    raise_begin = static_cast<size_t>(here) + 1;
    raise_when = !jump_when;
  } else if ((raise_inst = raising_run(*code_, static_cast<size_t>(target)))) {
    raise_begin = static_cast<size_t>(target);
    raise_when = jump_when;
  } else {
    return true;
  }
  const bc::Instruction& load_cls = *code_->instructions[raise_begin];
  if (load_cls.code() != bc::Opcode::LOAD_GLOBAL || !load_cls.argval) return true;
  // No try block may catch the raise: in this frame, nor around the calls
  // that inlined it. A `with` block of torch's grad-mode or autocast
  // managers only restores its state and re-raises: allowed (the frame has
  // left it when the check runs).
  auto may_catch = [](const InstructionTranslator& t, const bc::Instruction* at) {
    if (!at || !at->handler) return false;
    const bc::ExceptionHandler& h = *at->handler;
    const int first = h.target ? t.code_->index_of(h.target) : -1;
    if (first < 0 || static_cast<size_t>(first) + 1 >= t.code_->instructions.size() ||
        h.target->code() != bc::Opcode::PUSH_EXC_INFO ||
        t.code_->instructions[static_cast<size_t>(first) + 1]->code() != bc::Opcode::WITH_EXCEPT_START)
      return true;
    if (h.depth < 1 || static_cast<size_t>(h.depth) > t.stack_.size()) return true;
    const ValuePtr& exit = t.stack_[static_cast<size_t>(h.depth) - 1];
    PyObject* m = exit && exit->obj ? exit->obj.get() : nullptr;
    PyObject* self = m && PyMethod_Check(m) ? PyMethod_GET_SELF(m) : nullptr;
    if (!self) return true;
    auto* type = reinterpret_cast<PyObject*>(Py_TYPE(self));
    for (auto [module, name] : {std::pair{"torch", "no_grad"}, {"torch", "enable_grad"}, {"torch", "set_grad_enabled"},
                                {"torch", "autocast"}, {"torch.cpu.amp", "autocast"}})
      if (type == cached_module_attr(module, name)) return false;
    clear_probe_error();
    return true;
  };
  if (may_catch(*this, raise_inst)) return true;
  for (InstructionTranslator* up = parent_; up; up = up->parent_)
    if (may_catch(*up, up->current_)) return true;
  // The exception class, read (and guarded) as LOAD_GLOBAL reads it.
  const size_t depth = stack_.size();
  if (!op_load_global(load_cls)) return false;
  ValuePtr cls = stack_.back();
  stack_.resize(depth);
  PyObject* c = cls && (cls->is_constant() || cls->kind == ValueKind::callable) ? cls->obj.get() : nullptr;
  if (!c || !PyType_Check(c) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(c),
                                                  reinterpret_cast<PyTypeObject*>(PyExc_Exception)))
    return true;
  graph::SourceLoc loc = current_loc();
  std::string line;
  if (PyObject* getline = cached_module_attr("linecache", "getline")) {
    PyRef text = PyRef::steal(PyObject_CallFunction(getline, "si", loc.file.c_str(), loc.line));
    if (text && PyUnicode_Check(text.get())) line = utf8(text.get());
  }
  clear_probe_error();
  line.erase(0, line.find_first_not_of(" \t"));
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  const std::string message = "the check `" + (line.empty() ? std::string("?") : line) + "` at " + loc.file + ":" +
                              std::to_string(loc.line) + " failed (tracejit ran it after its compiled graph; eager " +
                              "raises " + reinterpret_cast<PyTypeObject*>(c)->tp_name + " here)";
  PyRef text = PyRef::steal(PyUnicode_FromString(message.c_str()));
  if (!text) return clear_probe_error(), unsupported("a runtime check's message is not valid UTF-8");
  std::vector<ValuePtr> record{cond, Value::constant(c), Value::constant(text.get()),
                               Value::constant(raise_when ? Py_False : Py_True)};
  shared_->side_effects.push_back(
      SideEffect{SideEffect::Kind::check, nullptr, "", Value::sequence(ValueKind::tuple, std::move(record))});
  handled = true;
  // On along the side that does not raise.
  if (raise_begin == static_cast<size_t>(here) + 1) jump_to(inst.target);
  return true;
}

}  // namespace tj::tracer
