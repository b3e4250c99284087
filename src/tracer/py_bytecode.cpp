// Python bindings of the bytecode toolkit (bytecode.h, assemble.h), for tests
// and tools: `_tracejit._bc_*`, registered by the runtime's module through
// trace_api.h (register_bytecode_bindings), so the runtime needs neither
// header. Thin on purpose: each function decodes, maybe edits, maybe
// assembles, and converts the result into tuples.
//
//   _bc_decode(code) -> [(opname, opcode, arg, argval, offset, starts_line,
//                         is_jump_target, jump_target_offset, line,
//                         positions, handler)]
//       argval: the resolved operand (jumps: the target offset; operands
//       without one: arg, or None without argument); starts_line: the line
//       or None (dis semantics); jump_target_offset: None unless a jump;
//       line: None for no location; positions: (line, end_line, col,
//       end_col) with None for -1; handler: None or (target_offset, depth,
//       lasti).
//   _bc_exception_table(code) -> [(start, end, target, depth, lasti)]
//       grouped from the decoded per-instruction handlers (byte offsets).
//   _bc_positions(code) -> [(line, end_line, col, end_col)] per code unit,
//       from the C++ line-table reader (compare with code.co_positions()).
//   _bc_stack_depth(code) -> int, the stack-depth analysis of the decoding.
//   _bc_roundtrip(code) -> code, decode + assemble.
//   _bc_insert_nops(code, every_n, count=1) -> code with `count` NOPs (no
//       location) inserted before every `every_n`-th instruction (or the
//       next one where bc::can_insert_before allows), which moves jumps and
//       exception ranges.
//   _bc_assemble(code, [(opname, arg, argval, target_index)]) -> code from
//       a hand-built list (no exception handlers, no locations).
//   _bc_format(code) -> str, format_instructions() of the decoding.
#include <optional>
#include <string>
#include <vector>

#include "tracer/assemble.h"
#include "tracer/bytecode.h"
#include "tracer/trace_api.h"

namespace tj::tracer {
namespace {

PyCodeObject* as_code(PyObject* obj) {  // borrowed in, borrowed out; null + TypeError
  if (!PyCode_Check(obj)) {
    PyErr_SetString(PyExc_TypeError, "expected a code object");
    return nullptr;
  }
  return reinterpret_cast<PyCodeObject*>(obj);
}

// decode() or a Python RuntimeError.
std::optional<bc::DecodedCode> decode_or_raise(PyObject* obj) {
  PyCodeObject* code = as_code(obj);
  if (!code) return std::nullopt;
  Expected<bc::DecodedCode> decoded = bc::decode(code);
  if (!decoded) {
    PyErr_SetString(PyExc_RuntimeError, decoded.error().message.c_str());
    return std::nullopt;
  }
  return std::move(decoded.value());
}

// New reference, or null with RuntimeError.
PyObject* assemble_or_raise(const bc::InstructionList& instructions, PyObject* code) {
  Expected<PyRef> result =
      bc::assemble(instructions, reinterpret_cast<PyCodeObject*>(code));
  if (!result) {
    PyErr_SetString(PyExc_RuntimeError, result.error().message.c_str());
    return nullptr;
  }
  return result->release();
}

PyObject* int_or_none(int v) {  // new reference
  if (v < 0) Py_RETURN_NONE;
  return PyLong_FromLong(v);
}

PyObject* position_tuple(const bc::Position& p) {  // new reference
  return Py_BuildValue("(NNNN)", int_or_none(p.line), int_or_none(p.end_line),
                       int_or_none(p.col), int_or_none(p.end_col));
}

PyObject* py_decode(PyObject*, PyObject* arg) {
  std::optional<bc::DecodedCode> decoded = decode_or_raise(arg);
  if (!decoded) return nullptr;
  PyRef list = PyRef::steal(PyList_New(0));
  if (!list) return nullptr;
  for (const auto& inst : decoded->instructions) {
    PyRef argval;
    if (inst->target)
      argval = PyRef::steal(PyLong_FromLong(inst->target->offset));
    else if (inst->argval)
      argval = inst->argval;
    else if (bc::has_arg(inst->opcode))
      argval = PyRef::steal(PyLong_FromLong(inst->arg));
    else
      argval = PyRef::borrow(Py_None);
    PyRef handler = inst->handler ? PyRef::steal(Py_BuildValue("(iiO)", inst->handler->target->offset,
                                                               inst->handler->depth,
                                                               inst->handler->lasti ? Py_True : Py_False))
                                  : PyRef::borrow(Py_None);
    PyRef line = inst->starts_line ? PyRef::steal(PyLong_FromLong(inst->position.line)) : PyRef::borrow(Py_None);
    PyRef target = inst->target ? PyRef::steal(PyLong_FromLong(inst->target->offset)) : PyRef::borrow(Py_None);
    if (!argval || !handler || !line || !target) return nullptr;
    std::string name(inst->name());
    // N: int_or_none and position_tuple give new references (null: Py_BuildValue fails)
    PyRef row = PyRef::steal(Py_BuildValue(
        "(s#iiOiOOONNO)", name.data(), static_cast<Py_ssize_t>(name.size()), inst->opcode,
        bc::has_arg(inst->opcode) ? inst->arg : -1, argval.get(), inst->offset, line.get(),
        inst->is_jump_target ? Py_True : Py_False, target.get(), int_or_none(inst->position.line),
        position_tuple(inst->position), handler.get()));
    if (!row || PyList_Append(list.get(), row.get()) < 0) return nullptr;
  }
  return list.release();
}

PyObject* py_exception_table(PyObject*, PyObject* arg) {
  std::optional<bc::DecodedCode> decoded = decode_or_raise(arg);
  if (!decoded) return nullptr;
  const bc::InstructionList& insts = decoded->instructions;
  PyCodeObject* code = reinterpret_cast<PyCodeObject*>(arg);
  int code_size = static_cast<int>(2 * Py_SIZE(code));  // Py_SIZE: code units
  PyRef list = PyRef::steal(PyList_New(0));
  if (!list) return nullptr;
  for (const bc::ExceptionTableEntry& e : bc::exception_table(insts)) {
    int last = decoded->index_of(e.last);
    int end = last + 1 < static_cast<int>(insts.size()) ? insts[last + 1]->offset : code_size;
    PyRef row = PyRef::steal(Py_BuildValue("(iiiiO)", e.first->offset, end, e.handler.target->offset,
                                           e.handler.depth, e.handler.lasti ? Py_True : Py_False));
    if (!row || PyList_Append(list.get(), row.get()) < 0) return nullptr;
  }
  return list.release();
}

PyObject* py_positions(PyObject*, PyObject* arg) {
  PyCodeObject* code = as_code(arg);
  if (!code) return nullptr;
  PyObject* table = code->co_linetable;  // borrowed
  std::vector<bc::Position> positions = bc::parse_line_table(
      {reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(table)),
       static_cast<size_t>(PyBytes_GET_SIZE(table))},
      code->co_firstlineno, static_cast<size_t>(Py_SIZE(code)));
  PyRef list = PyRef::steal(PyList_New(static_cast<Py_ssize_t>(positions.size())));
  if (!list) return nullptr;
  for (size_t i = 0; i < positions.size(); ++i) {
    PyObject* row = position_tuple(positions[i]);
    if (!row) return nullptr;
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), row);
  }
  return list.release();
}

PyObject* py_stack_depth(PyObject*, PyObject* arg) {
  std::optional<bc::DecodedCode> decoded = decode_or_raise(arg);
  if (!decoded) return nullptr;
  Expected<int> depth = bc::compute_stack_depth(
      decoded->instructions, reinterpret_cast<PyCodeObject*>(arg)->co_flags);
  if (!depth) {
    PyErr_SetString(PyExc_RuntimeError, depth.error().message.c_str());
    return nullptr;
  }
  return PyLong_FromLong(*depth);
}

PyObject* py_roundtrip(PyObject*, PyObject* arg) {
  std::optional<bc::DecodedCode> decoded = decode_or_raise(arg);
  if (!decoded) return nullptr;
  return assemble_or_raise(decoded->instructions, arg);
}

PyObject* py_insert_nops(PyObject*, PyObject* args) {
  PyObject* code;
  int every_n, count = 1;
  if (!PyArg_ParseTuple(args, "Oi|i", &code, &every_n, &count)) return nullptr;
  if (every_n < 1 || count < 0) {
    PyErr_SetString(PyExc_ValueError, "every_n must be >= 1 and count >= 0");
    return nullptr;
  }
  std::optional<bc::DecodedCode> decoded = decode_or_raise(code);
  if (!decoded) return nullptr;
  bc::InstructionList edited;
  const int nop = static_cast<int>(bc::Opcode::NOP);
  const size_t n_insts = decoded->instructions.size();
  std::vector<bool> allowed(n_insts);
  for (size_t i = 0; i < n_insts; ++i)
    allowed[i] = bc::can_insert_before(decoded->instructions, i);
  bool due = false;  // an insertion point was skipped (it split a fused pair)
  for (size_t i = 0; i < n_insts; ++i) {
    due = due || (i > 0 && i % static_cast<size_t>(every_n) == 0);
    if (due && allowed[i]) {
      due = false;
      auto& inst = decoded->instructions[i];
      // Jumps to `inst` keep going to `inst` (the NOPs are skipped); the
      // NOPs share its handler so exception ranges stay contiguous.
      for (int k = 0; k < count; ++k) {
        auto n = bc::Instruction::make(nop);
        n->handler = inst->handler;
        edited.push_back(std::move(n));
      }
    }
    edited.push_back(std::move(decoded->instructions[i]));
  }
  return assemble_or_raise(edited, code);
}

PyObject* py_assemble(PyObject*, PyObject* args) {
  PyObject *code, *rows;
  if (!PyArg_ParseTuple(args, "OO!", &code, &PyList_Type, &rows)) return nullptr;
  if (!as_code(code)) return nullptr;
  bc::InstructionList insts;
  std::vector<Py_ssize_t> targets;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); ++i) {
    const char* name;
    int arg;
    PyObject *argval, *target;
    if (!PyArg_ParseTuple(PyList_GET_ITEM(rows, i), "siOO", &name, &arg, &argval, &target))
      return nullptr;
    std::optional<int> opcode = bc::opcode_by_name(name);
    if (!opcode) {
      PyErr_Format(PyExc_ValueError, "unknown opcode %s", name);
      return nullptr;
    }
    insts.push_back(bc::Instruction::make(
        *opcode, arg, argval == Py_None ? PyRef() : PyRef::borrow(argval)));
    targets.push_back(target == Py_None ? -1 : PyLong_AsSsize_t(target));
    if (PyErr_Occurred()) return nullptr;
  }
  for (size_t i = 0; i < insts.size(); ++i) {
    if (targets[i] < 0) continue;
    if (targets[i] >= static_cast<Py_ssize_t>(insts.size())) {
      PyErr_SetString(PyExc_IndexError, "jump target index out of range");
      return nullptr;
    }
    insts[i]->target = insts[static_cast<size_t>(targets[i])].get();
  }
  return assemble_or_raise(insts, code);
}

PyObject* py_format(PyObject*, PyObject* arg) {
  std::optional<bc::DecodedCode> decoded = decode_or_raise(arg);
  if (!decoded) return nullptr;
  std::string text = bc::format_instructions(decoded->instructions);
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

PyMethodDef kBytecodeMethods[] = {
    {"_bc_decode", py_decode, METH_O, "decoded instructions of a code object"},
    {"_bc_exception_table", py_exception_table, METH_O, "exception table from the decoding"},
    {"_bc_positions", py_positions, METH_O, "per-code-unit positions from co_linetable"},
    {"_bc_stack_depth", py_stack_depth, METH_O, "stack-depth analysis of a code object"},
    {"_bc_roundtrip", py_roundtrip, METH_O, "decode + assemble"},
    {"_bc_insert_nops", py_insert_nops, METH_VARARGS, "(code, every_n, count=1) -> code"},
    {"_bc_assemble", py_assemble, METH_VARARGS,
     "(code, [(opname, arg, argval, target_index)]) -> code"},
    {"_bc_format", py_format, METH_O, "printed instruction list"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

int register_bytecode_bindings(PyObject* module) {
  return PyModule_AddFunctions(module, kBytecodeMethods);
}

}  // namespace tj::tracer
