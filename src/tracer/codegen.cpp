// Builds the transformed code object; see codegen.h.
#include "tracer/codegen.h"

#include "tracer/assemble.h"
#include "tracer/bytecode.h"

namespace tj::tracer {

namespace {

int op(const char* name) {
  auto o = bc::opcode_by_name(name);
  return o ? *o : -1;
}

bool is_cellvar(PyCodeObject* code, const std::string& name) {
  PyObject* cells = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_cellvars");
  bool found = false;
  if (cells) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cells); ++i) {
      const char* c = PyUnicode_AsUTF8(PyTuple_GET_ITEM(cells, i));
      if (c && name == c) found = true;
    }
    Py_DECREF(cells);
  }
  PyErr_Clear();
  return found;
}

}  // namespace

void emit_source_load(PyCodeObject* code, const Source& s, bc::InstructionList& out, const bc::Position& pos) {
  auto add = [&](int opcode, int arg, PyObject* argval_new) {
    auto inst = bc::Instruction::make(opcode, arg, PyRef::steal(argval_new));
    inst->position = pos;
    out.push_back(std::move(inst));
  };
  switch (s.kind) {
    case SourceKind::local:
      add(is_cellvar(code, s.name) ? op("LOAD_DEREF") : op("LOAD_FAST"), s.index, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::closure:
      add(op("LOAD_DEREF"), 0, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::closure_cell:
      add(op("LOAD_CLOSURE"), 0, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::global:
      add(op("LOAD_GLOBAL"), 0, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::module:  // __import__(name, fromlist=('__name__',)): the module itself
      add(op("LOAD_CONST"), 0, PyLong_FromLong(0));
      add(op("LOAD_CONST"), 0, Py_BuildValue("(s)", "__name__"));
      add(op("IMPORT_NAME"), 0, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::attr:
      emit_source_load(code, *s.base, out, pos);
      add(op("LOAD_ATTR"), 0, PyUnicode_FromString(s.name.c_str()));
      return;
    case SourceKind::call:
      emit_source_load(code, *s.base, out, pos);
      add(op("LOAD_METHOD"), 0, PyUnicode_FromString(s.name.c_str()));
      add(op("PRECALL"), 0, nullptr);
      add(op("CALL"), 0, nullptr);
      return;
    case SourceKind::item:
      emit_source_load(code, *s.base, out, pos);
      add(op("LOAD_CONST"), 0, Py_NewRef(s.key.get()));
      add(op("BINARY_SUBSCR"), 0, nullptr);
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
    if (inst->name() == "RESUME") break;
  }
  auto add = [&](int opcode, int arg, PyRef argval) {
    auto inst = bc::Instruction::make(opcode, arg, std::move(argval));
    inst->position = pos;
    out.push_back(std::move(inst));
  };
  add(op("PUSH_NULL"), 0, {});
  add(op("LOAD_CONST"), 0, PyRef::borrow(compiled));
  for (const auto& s : inputs) emit_source_load(original, *s, out, pos);
  int n = static_cast<int>(inputs.size());
  add(op("PRECALL"), n, {});
  add(op("CALL"), n, {});
  add(op("RETURN_VALUE"), 0, {});
  return bc::assemble(out, original);
}

}  // namespace tj::tracer
