// Builds the transformed code object; see codegen.h.
#include "tracer/codegen.h"

#include "tracer/assemble.h"
#include "tracer/bytecode.h"

namespace tj::tracer {

namespace {

using O = bc::Opcode;
int op(bc::Opcode o) { return static_cast<int>(o); }

bool is_cellvar(PyCodeObject* code, const std::string& name) {
  PyRef cells = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_cellvars"));
  bool found = false;
  for (Py_ssize_t i = 0; cells && i < PyTuple_GET_SIZE(cells.get()); ++i) {
    const char* c = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cells.get(), i));
    if (c && name == c) found = true;
  }
  PyErr_Clear();  // a code object's own tuples: nothing here raises but MemoryError, then "not found"
  return found;
}

}  // namespace

void emit_source_load(PyCodeObject* code, const Source& s, bc::InstructionList& out, const bc::Position& pos) {
  auto add = [&](int opcode, int arg, PyRef argval) {
    auto inst = bc::Instruction::make(opcode, arg, std::move(argval));
    inst->position = pos;
    out.push_back(std::move(inst));
  };
  auto name = [&] { return PyRef::steal(PyUnicode_FromString(s.name.c_str())); };
  switch (s.kind) {
    case SourceKind::local:
      add(is_cellvar(code, s.name) ? op(O::LOAD_DEREF) : op(O::LOAD_FAST), s.index, name());
      return;
    case SourceKind::closure:
      add(op(O::LOAD_DEREF), 0, name());
      return;
    case SourceKind::closure_cell:
      add(op(O::LOAD_CLOSURE), 0, name());
      return;
    case SourceKind::global:
      add(op(O::LOAD_GLOBAL), 0, name());
      return;
    case SourceKind::module:  // __import__(name, fromlist=('__name__',)): the module itself
      add(op(O::LOAD_CONST), 0, PyRef::steal(PyLong_FromLong(0)));
      add(op(O::LOAD_CONST), 0, PyRef::steal(Py_BuildValue("(s)", "__name__")));
      add(op(O::IMPORT_NAME), 0, name());
      return;
    case SourceKind::attr:
      emit_source_load(code, *s.base, out, pos);
      add(op(O::LOAD_ATTR), 0, name());
      return;
    case SourceKind::call:
      emit_source_load(code, *s.base, out, pos);
      add(op(O::LOAD_METHOD), 0, name());
      add(op(O::PRECALL), 0, PyRef());
      add(op(O::CALL), 0, PyRef());
      return;
    case SourceKind::item:
      emit_source_load(code, *s.base, out, pos);
      add(op(O::LOAD_CONST), 0, s.key);
      add(op(O::BINARY_SUBSCR), 0, PyRef());
      return;
  }
}

Expected<PyRef> make_transformed_code(PyCodeObject* original, PyObject* compiled,
                                      const std::vector<SourcePtr>& inputs) {
  auto decoded = bc::decode(original);
  if (!decoded.ok()) return decoded.error();
  bc::InstructionList out;
  bc::Position pos;
  pos.line = original->co_firstlineno;
  // The prologue: cells and free variables must exist before any load.
  for (const auto& inst : decoded->instructions) {
    auto copy = bc::Instruction::make(inst->opcode, inst->arg, inst->argval);
    copy->position = inst->position;
    out.push_back(std::move(copy));
    if (inst->code() == bc::Opcode::RESUME) break;
  }
  auto add = [&](int opcode, int arg, PyRef argval) {
    auto inst = bc::Instruction::make(opcode, arg, std::move(argval));
    inst->position = pos;
    out.push_back(std::move(inst));
  };
  add(op(O::PUSH_NULL), 0, {});
  add(op(O::LOAD_CONST), 0, PyRef::borrow(compiled));
  for (const auto& s : inputs) emit_source_load(original, *s, out, pos);
  int n = static_cast<int>(inputs.size());
  add(op(O::PRECALL), n, {});
  add(op(O::CALL), n, {});
  add(op(O::RETURN_VALUE), 0, {});
  return bc::assemble(out, original);
}

}  // namespace tj::tracer
