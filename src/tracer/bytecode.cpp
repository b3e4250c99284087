// decode(): CPython 3.11 code object -> InstructionList (see bytecode.h).
//
// Four passes over the code: split `co_code` into instructions (folding
// EXTENDED_ARG, skipping CACHE), resolve arguments against co_consts /
// co_names / localsplus, link jump targets, then attach positions from
// co_linetable and handlers from co_exceptiontable. The results agree with
// `dis.get_instructions` (tests/bytecode/test_roundtrip.py checks that on
// thousands of code objects).
#include "tracer/bytecode.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace tj::bc {
namespace {

std::span<const uint8_t> bytes_of(PyObject* bytes) {
  assert(PyBytes_Check(bytes));
  return {reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytes)),
          static_cast<size_t>(PyBytes_GET_SIZE(bytes))};
}

// Resolves `inst.argval` from the argument; false if the index is out of range.
bool resolve_argval(Instruction& inst, PyCodeObject* code) {
  auto item = [](PyObject* tuple, int i) -> PyObject* {  // borrowed, or null
    if (i < 0 || i >= PyTuple_GET_SIZE(tuple)) return nullptr;
    return PyTuple_GET_ITEM(tuple, i);
  };
  PyObject* value = nullptr;  // borrowed
  switch (inst.info().arg_kind) {
    case ArgKind::none:
    case ArgKind::number:
    case ArgKind::binary_op:
    case ArgKind::jump:
      return true;
    case ArgKind::name: value = item(code->co_names, inst.arg); break;
    case ArgKind::global_name: value = item(code->co_names, inst.arg >> 1); break;
    case ArgKind::constant: value = item(code->co_consts, inst.arg); break;
    case ArgKind::local:
    case ArgKind::free: value = item(code->co_localsplusnames, inst.arg); break;
    case ArgKind::compare: {
      auto names = compare_op_names();
      if (inst.arg < 0 || inst.arg >= static_cast<int>(names.size())) return false;
      inst.argval = PyRef::steal(
          PyUnicode_FromStringAndSize(names[inst.arg].data(), names[inst.arg].size()));
      return static_cast<bool>(inst.argval);
    }
  }
  if (!value) return false;
  inst.argval = PyRef::borrow(value);
  return true;
}

// Byte offset a jump goes to, computed from the offset of its opcode unit
// (after any EXTENDED_ARG prefixes): relative to the end of the instruction.
int jump_target_offset(const Instruction& inst, int op_offset) {
  const OpcodeInfo& row = inst.info();
  int next = op_offset + 2 + 2 * row.cache_entries;
  return row.jump_kind == JumpKind::backward ? next - 2 * inst.arg : next + 2 * inst.arg;
}

}  // namespace

std::unique_ptr<Instruction> Instruction::make(int opcode, int arg, PyRef argval) {
  assert(opcode_info(opcode) && "make() of an unknown opcode");
  auto inst = std::make_unique<Instruction>();
  inst->opcode = opcode;
  inst->arg = arg;
  inst->argval = std::move(argval);
  return inst;
}

std::unique_ptr<Instruction> Instruction::make_jump(int opcode, Instruction* target) {
  assert(is_jump(opcode) && target && "make_jump() needs a jump opcode and a target");
  auto inst = make(opcode);
  inst->target = target;
  return inst;
}

int instruction_units(int opcode, int arg) {
  int prefixes = arg > 0xffffff ? 3 : arg > 0xffff ? 2 : arg > 0xff ? 1 : 0;
  return prefixes + 1 + info(opcode).cache_entries;
}

bool can_insert_before(const InstructionList& instructions, size_t index) {
  if (index == 0 || index >= instructions.size()) return true;
  using O = Opcode;
  const Opcode before = instructions[index - 1]->code(), after = instructions[index]->code();
  return !((before == O::PRECALL && after == O::CALL) || (before == O::SEND && after == O::YIELD_VALUE) ||
           (before == O::YIELD_VALUE && after == O::RESUME));
}

int DecodedCode::index_of(const Instruction* inst) const {
  if (!inst) return -1;
  const int hint = inst->index_hint;
  if (hint >= 0 && static_cast<size_t>(hint) < instructions.size() && instructions[static_cast<size_t>(hint)].get() == inst)
    return hint;
  int found = -1;
  for (size_t i = 0; i < instructions.size(); ++i) {
    instructions[i]->index_hint = static_cast<int>(i);
    if (instructions[i].get() == inst) found = static_cast<int>(i);
  }
  return found;
}

Instruction* DecodedCode::insert(size_t index, std::unique_ptr<Instruction> inst) {
  assert(index <= instructions.size());
  Instruction* raw = inst.get();
  instructions.insert(instructions.begin() + static_cast<ptrdiff_t>(index), std::move(inst));
  return raw;
}

void DecodedCode::retarget(const Instruction* from, Instruction* to) {
  for (auto& inst : instructions) {
    if (inst->target == from) inst->target = to;
    if (inst->handler && inst->handler->target == from) inst->handler->target = to;
  }
}

Expected<DecodedCode> decode(PyCodeObject* code) {
  DecodedCode out;
  out.code = PyRef::borrow(reinterpret_cast<PyObject*>(code));
  PyRef co_code = PyRef::steal(PyCode_GetCode(code));
  if (!co_code) {
    PyErr_Clear();  // reported as the decode's Error
    return Error{"decode: cannot read co_code"};
  }
  std::span<const uint8_t> bytes = bytes_of(co_code.get());
  if (bytes.size() % 2) return Error{"decode: co_code has an odd length"};

  // 1. Split into instructions. `op_offsets[i]`: offset of instruction i's
  // opcode unit; `by_offset`: start offset -> index.
  std::vector<int> op_offsets;
  std::unordered_map<int, size_t> by_offset;
  int ext = 0, start = -1;
  for (size_t pos = 0; pos < bytes.size();) {
    int opcode = deoptimize(bytes[pos]);
    int arg = bytes[pos + 1] | ext;
    if (opcode < 0 || !opcode_info(opcode))
      return Error{"decode: unknown opcode " + std::to_string(bytes[pos]) + " at offset " +
                   std::to_string(pos)};
    if (start < 0) start = static_cast<int>(pos);
    if (opcode == kExtendedArg) {
      ext = arg << 8;
      pos += 2;
      continue;
    }
    auto inst = Instruction::make(opcode, has_arg(opcode) ? arg : 0);
    inst->offset = start;
    by_offset[start] = out.instructions.size();
    op_offsets.push_back(static_cast<int>(pos));
    out.instructions.push_back(std::move(inst));
    pos += 2 + 2 * static_cast<size_t>(info(opcode).cache_entries);
    ext = 0;
    start = -1;
  }
  if (start >= 0) return Error{"decode: co_code ends in EXTENDED_ARG"};

  auto at_offset = [&](int offset) -> Instruction* {
    auto it = by_offset.find(offset);
    return it == by_offset.end() ? nullptr : out.instructions[it->second].get();
  };

  // 2 + 3. Operands and jump targets.
  for (size_t i = 0; i < out.instructions.size(); ++i) {
    Instruction& inst = *out.instructions[i];
    if (!resolve_argval(inst, code)) {
      PyErr_Clear();  // reported as the decode's Error
      return Error{"decode: argument out of range at offset " + std::to_string(inst.offset)};
    }
    if (inst.info().arg_kind != ArgKind::jump) continue;
    int target = jump_target_offset(inst, op_offsets[i]);
    inst.target = at_offset(target);
    if (!inst.target)
      return Error{"decode: jump at offset " + std::to_string(inst.offset) +
                   " to a non-instruction offset " + std::to_string(target)};
    inst.target->is_jump_target = true;
  }

  // 4a. Positions; an instruction starts a line as in dis.findlinestarts.
  std::vector<Position> positions = parse_line_table(bytes_of(code->co_linetable),
                                                     code->co_firstlineno, bytes.size() / 2);
  int last_line = -1;
  for (auto& inst : out.instructions) {
    inst->position = positions[static_cast<size_t>(inst->offset) / 2];
    if (inst->position.line >= 0 && inst->position.line != last_line) {
      inst->starts_line = true;
      last_line = inst->position.line;
    }
  }

  // 4b. Handlers. Entries do not overlap in 3.11 (nesting is flattened by
  // the compiler), so each instruction gets at most one.
  for (const RawExceptionEntry& e : parse_exception_table(bytes_of(code->co_exceptiontable))) {
    Instruction* target = at_offset(e.target);
    if (!target) return Error{"decode: exception handler at a non-instruction offset"};
    target->is_handler = true;
    auto first = by_offset.find(e.start);
    if (first == by_offset.end()) return Error{"decode: exception entry at a non-instruction offset"};
    for (size_t i = first->second;
         i < out.instructions.size() && out.instructions[i]->offset < e.end; ++i)
      out.instructions[i]->handler = ExceptionHandler{target, e.depth, e.lasti};
  }
  return out;
}

std::vector<ExceptionTableEntry> exception_table(const InstructionList& instructions) {
  std::vector<ExceptionTableEntry> entries;
  const Instruction* prev = nullptr;
  for (const auto& inst : instructions) {
    if (inst->handler) {
      if (prev && prev->handler == inst->handler)
        entries.back().last = inst.get();
      else
        entries.push_back(ExceptionTableEntry{inst.get(), inst.get(), *inst->handler});
    }
    prev = inst.get();
  }
  return entries;
}

std::string format_instructions(const InstructionList& instructions) {
  std::unordered_map<const Instruction*, size_t> index;
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  auto ref = [&](const Instruction* inst) {
    auto it = index.find(inst);
    return it == index.end() ? std::string("?") : std::to_string(it->second);
  };
  std::string out;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& inst = *instructions[i];
    out += std::to_string(i) + ": " + std::string(inst.name());
    if (inst.target) {
      out += " -> " + ref(inst.target);
    } else if (inst.argval) {
      PyRef repr = PyRef::steal(PyObject_Repr(inst.argval.get()));
      const char* text = repr ? PyUnicode_AsUTF8(repr.get()) : nullptr;
      if (!text) PyErr_Clear();  // a listing: "<?>" for a constant whose repr fails
      out += " " + std::string(text ? text : "<?>");
      if (inst.info().arg_kind == ArgKind::global_name && (inst.arg & 1)) out += " (+NULL)";
    } else if (has_arg(inst.opcode)) {
      out += " " + std::to_string(inst.arg);
    }
    if (inst.handler)
      out += "  [exc -> " + ref(inst.handler->target) + " depth " +
             std::to_string(inst.handler->depth) + (inst.handler->lasti ? " lasti]" : "]");
    out += "\n";
  }
  return out;
}

}  // namespace tj::bc
