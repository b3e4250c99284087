// Transformed code and resume functions of a graph break; see resume.h.
#include "tracer/resume.h"

#include <algorithm>
#include <string>

#include "tracer/assemble.h"
#include "tracer/binary_ops.h"
#include "tracer/bytecode.h"
#include "tracer/codegen.h"
#include "tracer/liveness.h"

namespace tj::tracer {

namespace {

using O = bc::Opcode;
int op(bc::Opcode o) { return static_cast<int>(o); }

PyRef str(const std::string& s) { return PyRef::steal(PyUnicode_FromString(s.c_str())); }
PyRef integer(long v) { return PyRef::steal(PyLong_FromLong(v)); }

std::string slot_name(PyCodeObject* code, int slot) {
  const char* c = PyUnicode_AsUTF8(PyTuple_GET_ITEM(code->co_localsplusnames, slot));
  return c ? c : "?";
}

bool is_prologue(const bc::Instruction& inst) { return bc::is_prologue(inst.code()); }

struct Emitter {
  bc::InstructionList out;
  bc::Position pos;
  bc::Instruction* add(int opcode, int arg = 0, PyRef argval = {}) {
    auto inst = bc::Instruction::make(opcode, arg, std::move(argval));
    inst->position = pos;
    out.push_back(std::move(inst));
    return out.back().get();
  }
};

// Whether `code`, or a function nested in it through `nonlocal`, stores or
// deletes the cell `name` (borrowed). Code that cannot be decoded: maybe.
bool rebinds_cell(PyCodeObject* code, PyObject* name) {
  auto decoded = bc::decode(code);
  if (!decoded.ok()) return true;
  for (const auto& inst : decoded->instructions) {
    bool writes = inst->code() == O::STORE_DEREF || inst->code() == O::DELETE_DEREF;
    if (writes && inst->argval && PyUnicode_Compare(inst->argval.get(), name) == 0) return true;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(code->co_consts); ++i) {
    PyObject* nested = PyTuple_GET_ITEM(code->co_consts, i);
    if (!PyCode_Check(nested)) continue;
    auto* inner = reinterpret_cast<PyCodeObject*>(nested);
    PyRef freevars = PyRef::steal(PyObject_GetAttrString(nested, "co_freevars"));
    if (!freevars) return true;
    int shares = PySequence_Contains(freevars.get(), name);
    if (shares < 0) return true;
    if (shares == 1 && rebinds_cell(inner, name)) return true;
  }
  return false;
}

// The first parameter a resume function takes so that a zero-argument
// super() works there (liveness.h, super_reads_first_local): the frame's
// first local (`name`, then also one of the target's live locals), or, when
// that local is a cell of the frame (a free variable of the resume
// function), the cell's value as the plain local kSuperSelf. No name: the
// parameters are the stack values, then the live locals.
struct SuperSelf {
  PyRef name;              // the frame's first local; null: none
  bool from_cell = false;  // passed as kSuperSelf, loaded with LOAD_DEREF
};

Expected<SuperSelf> super_self(PyCodeObject* original, const ResumeTarget& target) {
  if (!super_reads_first_local(original)) return SuperSelf{};
  PyRef name = PyRef::borrow(PyTuple_GET_ITEM(original->co_localsplusnames, 0));
  const char* kinds = PyBytes_AsString(original->co_localspluskinds);
  if (!kinds) {
    PyErr_Clear();  // co_localspluskinds is always bytes
    return Error{"cannot read co_localspluskinds"};
  }
  constexpr char kFastCell = 0x40;  // CPython 3.11's CO_FAST_CELL
  if (kinds[0] & kFastCell) {
    // The value is taken once, at the break: a later rebinding of the cell
    // would not reach super() (CPython reads the cell at each call).
    if (rebinds_cell(original, name.get())) return Error{"super() reads a first argument that is rebound in a closure"};
    return SuperSelf{std::move(name), true};
  }
  if (std::find(target.live_locals.begin(), target.live_locals.end(), 0) == target.live_locals.end())
    return Error{"super() would read an unbound first argument"};
  return SuperSelf{std::move(name), false};
}

}  // namespace

bool is_resume_code(PyCodeObject* code) {
  const char* qual = PyUnicode_AsUTF8(code->co_qualname);
  if (!qual) PyErr_Clear();  // a qualname that does not encode: not ours
  return qual && std::string_view(qual).find(kResumeMarker) != std::string_view::npos;
}

Expected<PyRef> make_resume_code(PyCodeObject* original, const ResumeTarget& target, int number) {
  auto decoded = bc::decode(original);
  if (!decoded.ok()) return decoded.error();
  auto& body = decoded->instructions;
  if (target.instruction < 0 || static_cast<size_t>(target.instruction) >= body.size())
    return Error{"resume target out of range"};
  bc::Instruction* resume_at = body[static_cast<size_t>(target.instruction)].get();
  if (is_prologue(*resume_at)) return Error{"cannot resume inside the prologue"};

  auto first = super_self(original, target);
  if (!first.ok()) return first.error();

  Emitter e;
  e.pos = resume_at->position;
  // The frame's cells become free variables of the resume function: it
  // receives the very cells in its closure, after the frame's free ones.
  int nfree = original->co_nfreevars + original->co_ncellvars;
  if (nfree > 0) e.add(op(O::COPY_FREE_VARS), nfree);
  e.add(op(O::RESUME), 0);
  std::vector<PyRef> varnames;
  if (first->name) varnames.push_back(first->from_cell ? str(kSuperSelf) : first->name);
  for (int i = 0; i < target.stack_depth; ++i) {
    if (target.stack_is_null[static_cast<size_t>(i)]) {
      e.add(op(O::PUSH_NULL));
      continue;
    }
    varnames.push_back(str("___stack" + std::to_string(i)));
    e.add(op(O::LOAD_FAST), static_cast<int>(varnames.size()) - 1, varnames.back());
    // A loop's iterator arrives as the list of what is left: the tracer
    // unrolls the rest of the loop over it.
    if (target.stack_is_iterator[static_cast<size_t>(i)]) e.add(op(O::GET_ITER));
  }
  for (int slot : target.live_locals)
    if (slot != 0 || !first->name) varnames.push_back(str(slot_name(original, slot)));
  e.add(op(O::JUMP_FORWARD), 0)->target = resume_at;
  // The frame's own instructions, minus its prologue (ours replaces it).
  for (auto& inst : body)
    if (!is_prologue(*inst)) e.out.push_back(std::move(inst));

  // Parameters first, then the frame's other locals.
  PyRef original_varnames =
      PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(original), "co_varnames"));
  if (!original_varnames) return Error{"cannot read co_varnames"};
  PyRef cellvars = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(original), "co_cellvars"));
  PyRef freevars = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(original), "co_freevars"));
  if (!cellvars || !freevars) return Error{"cannot read co_cellvars/co_freevars"};
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(original_varnames.get()); ++i) {
    PyObject* name = PyTuple_GET_ITEM(original_varnames.get(), i);
    if (PySequence_Contains(cellvars.get(), name) == 1) continue;  // now a free variable
    bool present = false;
    for (const auto& v : varnames) present |= PyUnicode_Compare(v.get(), name) == 0;
    if (!present) varnames.push_back(PyRef::borrow(name));
  }
  PyRef names = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(varnames.size())));
  if (!names) return Error{"cannot build co_varnames"};
  for (size_t i = 0; i < varnames.size(); ++i)
    PyTuple_SET_ITEM(names.get(), static_cast<Py_ssize_t>(i), PyRef(varnames[i]).release());

  // Tracebacks read like the user's: a resume function is named after the
  // function it continues (co_name); its qualified name says what it is,
  // "<qualname>.__resume_at_<offset>_<n>" (kResumeMarker, once).
  int offset = resume_at->offset;
  const char* qual_c = PyUnicode_AsUTF8(original->co_qualname);
  const char* name_c = PyUnicode_AsUTF8(original->co_name);
  if (!qual_c || !name_c) return Error{"cannot read the function's name"};
  std::string qualname = qual_c;
  if (auto at = qualname.find(kResumeMarker); at != std::string::npos) qualname.resize(at ? at - 1 : 0);
  qualname += (qualname.empty() ? "" : ".") + std::string(kResumeMarker) + std::to_string(offset) + "_" +
              std::to_string(number);
  int stack_args = 0;
  for (bool is_null : target.stack_is_null) stack_args += is_null ? 0 : 1;
  int argcount = stack_args + static_cast<int>(target.live_locals.size()) + (first->from_cell ? 1 : 0);
  PyRef all_free = PyRef::steal(PySequence_Concat(freevars.get(), cellvars.get()));
  if (!all_free) return Error{"cannot build co_freevars"};
  PyRef kwargs = PyRef::steal(Py_BuildValue(
      "{s:O,s:i,s:i,s:i,s:i,s:s,s:s,s:O,s:()}", "co_varnames", names.get(), "co_argcount", argcount,
      "co_posonlyargcount", 0, "co_kwonlyargcount", 0, "co_flags", original->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS),
      "co_name", name_c, "co_qualname", qualname.c_str(), "co_freevars", all_free.get(), "co_cellvars"));
  if (!kwargs) return Error{"cannot build the resume function's signature"};
  bc::AssembleOptions options;
  options.replace_kwargs = kwargs.get();
  return bc::assemble(e.out, original, options);
}

namespace {
// `__tj_restore = compiled(inputs...)`, then the restored locals, cells and
// stack values unpacked from it, and the temporary deleted.
void emit_restore(Emitter& e, PyCodeObject* original, PyObject* compiled, const std::vector<SourcePtr>& inputs,
                  const GraphBreak& plan) {
  // __tj_restore = compiled(inputs...)
  PyRef restore = str("__tj_restore");
  e.add(op(O::PUSH_NULL));
  e.add(op(O::LOAD_CONST), 0, PyRef::borrow(compiled));
  for (const auto& s : inputs) emit_source_load(original, *s, e.out, e.pos);
  e.add(op(O::PRECALL), static_cast<int>(inputs.size()));
  e.add(op(O::CALL), static_cast<int>(inputs.size()));
  e.add(op(O::STORE_FAST), 0, restore);
  long k = 0;
  for (int slot : plan.restored_locals) {
    e.add(op(O::LOAD_FAST), 0, restore);
    e.add(op(O::LOAD_CONST), 0, integer(k++));
    e.add(op(O::BINARY_SUBSCR));
    e.add(op(O::STORE_FAST), slot, str(slot_name(original, slot)));
  }
  for (int slot : plan.restored_cells) {
    e.add(op(O::LOAD_FAST), 0, restore);
    e.add(op(O::LOAD_CONST), 0, integer(k++));
    e.add(op(O::BINARY_SUBSCR));
    e.add(op(O::STORE_DEREF), slot, str(slot_name(original, slot)));
  }
  for (bool is_null : plan.stack_is_null) {
    if (is_null) {
      e.add(op(O::PUSH_NULL));
      continue;
    }
    e.add(op(O::LOAD_FAST), 0, restore);
    e.add(op(O::LOAD_CONST), 0, integer(k++));
    e.add(op(O::BINARY_SUBSCR));
  }
  // Not a local of the user's (locals(), frame inspection in the span), and
  // the graph's outputs are not kept alive through the resume calls.
  e.add(op(O::DELETE_FAST), 0, restore);
}

// The span, run by CPython; its jump instruction (null when none).
bc::Instruction* emit_span(Emitter& e, const bc::InstructionList& code, const GraphBreak& plan) {
  bc::Instruction* jump = nullptr;
  for (int i = plan.span_begin; i < plan.span_end; ++i) {
    const auto& inst = *code[static_cast<size_t>(i)];
    if (i == plan.failing && inst.code() == O::LOAD_METHOD) {  // (NULL, attribute), always (break_planner.cpp)
      e.add(op(O::LOAD_ATTR), inst.arg, inst.argval)->position = inst.position;
      e.add(op(O::PUSH_NULL))->position = inst.position;
      e.add(op(O::SWAP), 2)->position = inst.position;
      continue;
    }
    auto copy = bc::Instruction::make(inst.opcode, inst.arg, inst.argval);
    copy->position = inst.position;
    if (inst.target) jump = copy.get();
    e.out.push_back(std::move(copy));
  }
  return jump;
}

// A tail for `target`: return resume(*stack, *live_locals), with the resume
// function made from `resume_code`; its first instruction.
Expected<bc::Instruction*> emit_resume_call(Emitter& e, PyCodeObject* original, const ResumeTarget& target,
                                            const PyRef& resume_code) {
  // Pop the stack into temporaries (a NULL into a sink: STORE_FAST takes
  // NULL, POP_TOP would not), then pack the values in order.
  bc::Instruction* first = nullptr;
  int values = 0;
  for (int i = target.stack_depth; i-- > 0;) {
    bool is_null = target.stack_is_null[static_cast<size_t>(i)];
    bc::Instruction* store = e.add(op(O::STORE_FAST), 0, str(is_null ? "__tj_null" : "__tj_stack" + std::to_string(i)));
    if (!first) first = store;
    values += is_null ? 0 : 1;
  }
  for (int i = 0; i < target.stack_depth; ++i) {
    if (target.stack_is_null[static_cast<size_t>(i)]) continue;
    bool is_iterator = target.stack_is_iterator[static_cast<size_t>(i)];
    if (is_iterator) {
      bc::Instruction* build = e.add(op(O::BUILD_LIST), 0);
      if (!first) first = build;
    }
    bc::Instruction* load = e.add(op(O::LOAD_FAST), 0, str("__tj_stack" + std::to_string(i)));
    if (!first) first = load;
    if (is_iterator) e.add(op(O::LIST_EXTEND), 1);
  }
  bc::Instruction* build = e.add(op(O::BUILD_TUPLE), values);
  if (!first) first = build;
  e.add(op(O::PUSH_NULL));
  e.add(op(O::SWAP), 2);
  // The resume function's closure: the frame's free variables, then its cells.
  int nfree = original->co_nfreevars + original->co_ncellvars;
  if (nfree > 0) {
    for (const char* field : {"co_freevars", "co_cellvars"}) {
      PyRef vars = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(original), field));
      if (!vars) return Error{"cannot read the closure variables"};
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(vars.get()); ++i)
        e.add(op(O::LOAD_CLOSURE), 0, PyRef::borrow(PyTuple_GET_ITEM(vars.get(), i)));
    }
    e.add(op(O::BUILD_TUPLE), nfree);
  }
  e.add(op(O::LOAD_CONST), 0, resume_code);
  e.add(op(O::MAKE_FUNCTION), nfree > 0 ? 0x08 : 0);
  e.add(op(O::SWAP), 2);
  auto self_arg = super_self(original, target);  // checked by make_resume_code
  if (!self_arg.ok()) return self_arg.error();
  if (self_arg->name) {  // (first local,) + stack values
    e.add(op(self_arg->from_cell ? O::LOAD_DEREF : O::LOAD_FAST), 0, self_arg->name);
    e.add(op(O::BUILD_TUPLE), 1);
    e.add(op(O::SWAP), 2);
    e.add(op(O::BINARY_OP), bc::binary_op_arg(bc::BinaryOp::add, false));
  }
  int passed = 0;
  for (int slot : target.live_locals) {
    if (slot == 0 && self_arg->name) continue;
    e.add(op(O::LOAD_FAST), slot, str(slot_name(original, slot)));
    ++passed;
  }
  e.add(op(O::BUILD_TUPLE), passed);
  e.add(op(O::BINARY_OP), bc::binary_op_arg(bc::BinaryOp::add, false));  // tuple + tuple
  e.add(op(O::CALL_FUNCTION_EX), 0);
  e.add(op(O::RETURN_VALUE));
  return first;
}
}  // namespace

Expected<PyRef> make_break_code(PyCodeObject* original, PyObject* compiled,
                                const std::vector<SourcePtr>& inputs, const GraphBreak& plan,
                                int& next_resume_number) {
  auto decoded = bc::decode(original);
  if (!decoded.ok()) return decoded.error();
  const auto& code = decoded->instructions;

  // The resume functions first: they are constants of the transformed code.
  std::vector<PyRef> resume_codes;
  for (const auto& t : plan.targets) {
    auto rc = make_resume_code(original, t, next_resume_number++);
    if (!rc.ok()) return Error{"resume function: " + rc.error().message};
    resume_codes.push_back(std::move(*rc));
  }

  Emitter e;
  e.pos = code[static_cast<size_t>(plan.span_begin)]->position;
  for (const auto& inst : code) {  // the prologue
    if (!is_prologue(*inst)) break;
    auto copy = bc::Instruction::make(inst->opcode, inst->arg, inst->argval);
    copy->position = inst->position;
    e.out.push_back(std::move(copy));
  }
  emit_restore(e, original, compiled, inputs, plan);
  // The span, run by CPython.
  bc::Instruction* jump = emit_span(e, code, plan);
  // One tail per target: return resume(*stack, *live_locals).
  for (size_t t = 0; t < plan.targets.size(); ++t) {
    auto first = emit_resume_call(e, original, plan.targets[t], resume_codes[t]);
    if (!first.ok()) return first.error();
    if (t == 1) jump->target = *first;
  }
  if (plan.targets.size() == 1 && jump) return Error{"a jump with one resume target"};
  return bc::assemble(e.out, original);
}

}  // namespace tj::tracer
