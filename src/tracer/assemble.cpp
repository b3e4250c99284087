// assemble(): InstructionList -> code object, in the steps listed in
// assemble.h; and compute_stack_depth(), the worklist of step 7.
#include "tracer/assemble.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <unordered_map>

#include "support/py_errors.h"

namespace tj::bc {
namespace {

constexpr int kGeneratorFlags = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;

using IndexMap = std::unordered_map<const Instruction*, size_t>;

IndexMap index_instructions(const InstructionList& instructions) {
  IndexMap index;
  index.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  return index;
}

// The pending Python error as a message (and clears it).
std::string python_error(const char* context) {
  std::optional<std::string> message = FetchedError::fetch().message();  // unprintable: the context alone
  return message ? std::string(context) + ": " + *message : std::string(context);
}

std::vector<PyRef> tuple_items(PyObject* tuple) {  // borrowed tuple
  std::vector<PyRef> items;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i)
    items.push_back(PyRef::borrow(PyTuple_GET_ITEM(tuple, i)));
  return items;
}

PyRef tuple_of(const std::vector<PyRef>& items) {
  PyRef tuple = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
  if (!tuple) return {};
  for (size_t i = 0; i < items.size(); ++i)
    PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), PyRef(items[i]).release());  // the tuple's own
  return tuple;
}

// Equal as code constants: the same object, or the same exact type and
// value where value equality is safe (float/complex compare bit patterns,
// so 0.0 and -0.0 stay apart). Containers and other objects: identity only.
bool same_constant(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (Py_TYPE(a) != Py_TYPE(b)) return false;
  if (PyFloat_CheckExact(a)) {
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (PyComplex_CheckExact(a)) {
    Py_complex x = PyComplex_AsCComplex(a), y = PyComplex_AsCComplex(b);
    return std::memcmp(&x.real, &y.real, sizeof(double)) == 0 &&
           std::memcmp(&x.imag, &y.imag, sizeof(double)) == 0;
  }
  if (PyLong_CheckExact(a) || PyUnicode_CheckExact(a) || PyBytes_CheckExact(a)) {
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    if (eq < 0) PyErr_Clear();  // exact ints, strs and bytes: only MemoryError, then "different"
    return eq == 1;
  }
  return false;
}

bool same_name(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (!PyUnicode_Check(a) || !PyUnicode_Check(b)) return false;
  return PyUnicode_Compare(a, b) == 0;
}

// A growing operand table (co_consts, co_names, co_varnames).
struct OperandTable {
  std::vector<PyRef> items;
  bool (*same)(PyObject*, PyObject*);

  int find(PyObject* value) const {
    for (size_t i = 0; i < items.size(); ++i)
      if (items[i].get() == value) return static_cast<int>(i);
    for (size_t i = 0; i < items.size(); ++i)
      if (same(items[i].get(), value)) return static_cast<int>(i);
    return -1;
  }
  // `hint` is the instruction's old argument: kept when it still names `value`.
  int index_of(PyObject* value, int hint) {
    if (hint >= 0 && hint < static_cast<int>(items.size()) && items[hint].get() == value)
      return hint;
    int i = find(value);
    if (i >= 0) return i;
    items.push_back(PyRef::borrow(value));
    return static_cast<int>(items.size()) - 1;
  }
};

// Fast locals, then cells that are not also locals, then free variables:
// the localsplus layout `code.replace()` builds from these three tuples.
struct LocalsPlus {
  OperandTable varnames{{}, same_name};
  std::vector<PyRef> cell_only;
  std::vector<PyRef> freevars;

  std::vector<PyRef> names() const {
    std::vector<PyRef> all = varnames.items;
    all.insert(all.end(), cell_only.begin(), cell_only.end());
    all.insert(all.end(), freevars.begin(), freevars.end());
    return all;
  }
};

// The code.replace() keyword `key` from the user's overrides, else the
// template's attribute. New reference.
PyRef code_field(PyObject* overrides, PyObject* code, const char* key, const char* attr) {
  if (overrides) {
    if (PyObject* v = PyDict_GetItemString(overrides, key)) return PyRef::borrow(v);
  }
  return PyRef::steal(PyObject_GetAttrString(code, attr));
}

struct Operands {
  OperandTable consts{{}, same_constant};
  OperandTable names{{}, same_name};
  LocalsPlus locals;
};

// Step 1: the argument of every non-jump instruction.
Expected<std::vector<int>> resolve_operands(const InstructionList& instructions,
                                            Operands& ops) {
  // New fast locals first: they shift every cell and free index.
  const size_t original_varnames = ops.locals.varnames.items.size();
  for (const auto& inst : instructions) {
    if (inst->info().arg_kind != ArgKind::local || !inst->argval) continue;
    PyObject* name = inst->argval.get();
    bool known = ops.locals.varnames.find(name) >= 0;
    for (const auto& n : ops.locals.cell_only) known = known || same_name(n.get(), name);
    for (const auto& n : ops.locals.freevars) known = known || same_name(n.get(), name);
    if (!known) ops.locals.varnames.items.push_back(inst->argval);
  }
  const bool layout_kept = ops.locals.varnames.items.size() == original_varnames;
  const std::vector<PyRef> localsplus = ops.locals.names();
  auto localsplus_index = [&](const Instruction& inst) -> int {
    PyObject* name = inst.argval.get();
    if (layout_kept && inst.arg >= 0 && inst.arg < static_cast<int>(localsplus.size()) &&
        localsplus[inst.arg].get() == name)
      return inst.arg;
    for (size_t i = 0; i < localsplus.size(); ++i)
      if (same_name(localsplus[i].get(), name)) return static_cast<int>(i);
    return -1;
  };

  std::vector<int> args(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& inst = *instructions[i];
    int arg = inst.arg;
    if (inst.argval) {
      PyObject* value = inst.argval.get();
      switch (inst.info().arg_kind) {
        case ArgKind::name: arg = ops.names.index_of(value, inst.arg); break;
        case ArgKind::global_name:
          arg = (ops.names.index_of(value, inst.arg >> 1) << 1) | (inst.arg & 1);
          break;
        case ArgKind::constant: arg = ops.consts.index_of(value, inst.arg); break;
        case ArgKind::local:
        case ArgKind::free:
          arg = localsplus_index(inst);
          if (arg < 0)
            return Error{"assemble: instruction " + std::to_string(i) + " (" +
                         std::string(inst.name()) + ") names no local, cell or free variable"};
          break;
        case ArgKind::compare: {
          auto cmp = compare_op_names();
          const char* text = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
          if (!text) PyErr_Clear();  // not an operator name: no match
          for (size_t k = 0; text && k < cmp.size(); ++k)
            if (cmp[k] == text) arg = static_cast<int>(k);
          break;
        }
        case ArgKind::none:
        case ArgKind::number:
        case ArgKind::binary_op:
        case ArgKind::jump:
          break;
      }
    }
    if (arg < 0) return Error{"assemble: negative argument at instruction " + std::to_string(i)};
    args[i] = has_arg(inst.opcode) ? arg : 0;
  }
  return args;
}

// Step 2: the opcode of every instruction, jumps turned to face their target.
Expected<std::vector<int>> orient_jumps(const InstructionList& instructions,
                                        const IndexMap& index) {
  std::vector<int> opcodes(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& inst = *instructions[i];
    opcodes[i] = inst.opcode;
    if (!is_jump(inst.opcode)) continue;
    auto it = index.find(inst.target);
    if (!inst.target || it == index.end())
      return Error{"assemble: jump at instruction " + std::to_string(i) +
                   " has no target in the list"};
    bool backward = it->second <= i;
    if (backward == is_backward_jump(inst.opcode)) continue;
    std::optional<int> flipped = flip_jump_direction(inst.opcode);
    if (!flipped)
      return Error{"assemble: " + std::string(inst.name()) + " at instruction " +
                   std::to_string(i) + " cannot jump " + (backward ? "backward" : "forward")};
    opcodes[i] = *flipped;
  }
  return opcodes;
}

struct Layout {
  std::vector<int> units;    // code units of each instruction, prefixes and caches included
  std::vector<int> offsets;  // in code units
  int total = 0;
};

// Step 3: sizes and jump arguments to a fixed point. Sizes never shrink,
// so this ends; an instruction left larger than its argument needs gets
// zero EXTENDED_ARG prefixes.
Layout lay_out(const InstructionList& instructions, const IndexMap& index,
               const std::vector<int>& opcodes, std::vector<int>& args) {
  const size_t n = instructions.size();
  Layout layout;
  layout.units.resize(n);
  layout.offsets.resize(n);
  for (size_t i = 0; i < n; ++i)
    layout.units[i] = instruction_units(opcodes[i], is_jump(opcodes[i]) ? 0 : args[i]);
  for (bool changed = true; changed;) {
    changed = false;
    int offset = 0;
    for (size_t i = 0; i < n; ++i) {
      layout.offsets[i] = offset;
      offset += layout.units[i];
    }
    layout.total = offset;
    for (size_t i = 0; i < n; ++i) {
      if (!is_jump(opcodes[i])) continue;
      int target = layout.offsets[index.at(instructions[i]->target)];
      int end = layout.offsets[i] + layout.units[i];
      args[i] = is_backward_jump(opcodes[i]) ? end - target : target - end;
      assert(args[i] >= 0 && "jump oriented the wrong way");
      int needed = instruction_units(opcodes[i], args[i]);
      if (needed > layout.units[i]) {
        layout.units[i] = needed;
        changed = true;
      }
    }
  }
  return layout;
}

// Step 4.
std::string emit_code(const std::vector<int>& opcodes, const std::vector<int>& args,
                      const Layout& layout) {
  std::string code;
  code.reserve(static_cast<size_t>(layout.total) * 2);
  for (size_t i = 0; i < opcodes.size(); ++i) {
    int caches = info(opcodes[i]).cache_entries;
    int prefixes = layout.units[i] - 1 - caches;
    assert(prefixes >= 0 && prefixes <= 3 && "bad instruction size");
    for (int k = prefixes; k >= 1; --k) {
      code.push_back(static_cast<char>(kExtendedArg));
      code.push_back(static_cast<char>((args[i] >> (8 * k)) & 0xff));
    }
    code.push_back(static_cast<char>(opcodes[i]));
    code.push_back(static_cast<char>(args[i] & 0xff));
    code.append(static_cast<size_t>(caches) * 2, '\0');
  }
  assert(code.size() == static_cast<size_t>(layout.total) * 2);
  return code;
}

// Step 5.
Expected<std::string> emit_exception_table(const InstructionList& instructions,
                                           const IndexMap& index, const Layout& layout) {
  std::vector<RawExceptionEntry> raw;
  for (const ExceptionTableEntry& e : exception_table(instructions)) {
    auto target = index.find(e.handler.target);
    if (!e.handler.target || target == index.end())
      return Error{"assemble: an exception handler is not in the instruction list"};
    size_t first = index.at(e.first), last = index.at(e.last);
    raw.push_back(RawExceptionEntry{2 * layout.offsets[first],
                                    2 * (layout.offsets[last] + layout.units[last]),
                                    2 * layout.offsets[target->second], e.handler.depth,
                                    e.handler.lasti});
  }
  return encode_exception_table(raw);
}

// Step 6.
std::string emit_line_table(const InstructionList& instructions, const Layout& layout,
                            int first_line) {
  std::string table;
  int line = first_line;
  for (size_t i = 0; i < instructions.size(); ++i)
    append_location(table, line, instructions[i]->position, layout.units[i]);
  return table;
}

PyRef bytes_of(const std::string& s) {
  return PyRef::steal(PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())));
}

bool set_item(PyObject* dict, const char* key, const PyRef& value) {
  return value && PyDict_SetItemString(dict, key, value.get()) == 0;
}

}  // namespace

Expected<int> compute_stack_depth(const InstructionList& instructions, int co_flags) {
  const IndexMap index = index_instructions(instructions);
  const size_t n = instructions.size();
  std::vector<int> depth(n, -1);
  std::vector<std::pair<size_t, int>> work;
  int max_depth = 0;
  auto at = [&](const Instruction* inst, const char* what) -> Expected<size_t> {
    auto it = index.find(inst);
    if (!inst || it == index.end())
      return Error{std::string("stack depth: a ") + what + " is not in the instruction list"};
    return it->second;
  };
  if (n > 0) work.emplace_back(0, (co_flags & kGeneratorFlags) ? 1 : 0);
  while (!work.empty()) {
    auto [i, d] = work.back();
    work.pop_back();
    for (; i < n; ++i) {
      if (depth[i] >= 0) {
        if (depth[i] != d)
          return Error{"stack depth: instruction " + std::to_string(i) + " reached at depths " +
                       std::to_string(depth[i]) + " and " + std::to_string(d)};
        break;
      }
      depth[i] = d;
      const Instruction& inst = *instructions[i];
      if (inst.handler) {
        Expected<size_t> h = at(inst.handler->target, "handler");
        if (!h) return h.error();
        int hd = inst.handler->depth + 1 + (inst.handler->lasti ? 1 : 0);
        max_depth = std::max(max_depth, hd);
        work.emplace_back(*h, hd);
      }
      int next = d + stack_effect(inst.opcode, inst.arg, false);
      if (is_jump(inst.opcode)) {
        Expected<size_t> t = at(inst.target, "jump target");
        if (!t) return t.error();
        int td = d + stack_effect(inst.opcode, inst.arg, true);
        if (td < 0) return Error{"stack depth: negative at jump " + std::to_string(i)};
        max_depth = std::max(max_depth, td);
        work.emplace_back(*t, td);
      }
      if (ends_block(inst.opcode)) break;
      if (next < 0)
        return Error{"stack depth: negative after instruction " + std::to_string(i) + " (" +
                     std::string(inst.name()) + ")"};
      max_depth = std::max(max_depth, next);
      d = next;
    }
  }
  return max_depth;
}

Expected<PyRef> assemble(const InstructionList& instructions, PyCodeObject* template_code,
                         const AssembleOptions& options) {
  PyObject* tmpl = reinterpret_cast<PyObject*>(template_code);
  PyObject* overrides = options.replace_kwargs;
  if (overrides && !PyDict_Check(overrides)) return Error{"assemble: replace_kwargs is no dict"};
  if (instructions.empty()) return Error{"assemble: no instructions"};

  // Step 1: operands.
  Operands ops;
  PyRef varnames = code_field(overrides, tmpl, "co_varnames", "co_varnames");
  PyRef cellvars = code_field(overrides, tmpl, "co_cellvars", "co_cellvars");
  PyRef freevars = code_field(overrides, tmpl, "co_freevars", "co_freevars");
  PyRef first_line = code_field(overrides, tmpl, "co_firstlineno", "co_firstlineno");
  PyRef flags = code_field(overrides, tmpl, "co_flags", "co_flags");
  if (!varnames || !cellvars || !freevars || !first_line || !flags)
    return Error{python_error("assemble: reading the template")};
  if (!PyTuple_Check(varnames.get()) || !PyTuple_Check(cellvars.get()) ||
      !PyTuple_Check(freevars.get()))
    return Error{"assemble: co_varnames/co_cellvars/co_freevars must be tuples"};
  ops.consts.items = tuple_items(template_code->co_consts);
  ops.names.items = tuple_items(template_code->co_names);
  ops.locals.varnames.items = tuple_items(varnames.get());
  for (PyRef& cell : tuple_items(cellvars.get()))
    if (ops.locals.varnames.find(cell.get()) < 0) ops.locals.cell_only.push_back(cell);
  ops.locals.freevars = tuple_items(freevars.get());

  Expected<std::vector<int>> args = resolve_operands(instructions, ops);
  if (!args) return args.error();

  // Steps 2-6: code, exception table, line table.
  const IndexMap index = index_instructions(instructions);
  Expected<std::vector<int>> opcodes = orient_jumps(instructions, index);
  if (!opcodes) return opcodes.error();
  Layout layout = lay_out(instructions, index, *opcodes, *args);
  std::string code = emit_code(*opcodes, *args, layout);
  Expected<std::string> exceptions = emit_exception_table(instructions, index, layout);
  if (!exceptions) return exceptions.error();
  std::string lines =
      emit_line_table(instructions, layout, static_cast<int>(PyLong_AsLong(first_line.get())));

  // Step 7.
  Expected<int> stack = compute_stack_depth(instructions,
                                            static_cast<int>(PyLong_AsLong(flags.get())));
  if (!stack) return Error{"assemble: " + stack.error().message};

  // Step 8: the user's overrides, then ours.
  PyRef kwargs = PyRef::steal(overrides ? PyDict_Copy(overrides) : PyDict_New());
  PyRef new_varnames = tuple_of(ops.locals.varnames.items);
  if (!kwargs || !set_item(kwargs.get(), "co_code", bytes_of(code)) ||
      !set_item(kwargs.get(), "co_consts", tuple_of(ops.consts.items)) ||
      !set_item(kwargs.get(), "co_names", tuple_of(ops.names.items)) ||
      !set_item(kwargs.get(), "co_varnames", new_varnames) ||
      !set_item(kwargs.get(), "co_nlocals",
                PyRef::steal(PyLong_FromSsize_t(PyTuple_GET_SIZE(new_varnames.get())))) ||
      !set_item(kwargs.get(), "co_stacksize", PyRef::steal(PyLong_FromLong(*stack))) ||
      !set_item(kwargs.get(), "co_exceptiontable", bytes_of(*exceptions)) ||
      !set_item(kwargs.get(), "co_linetable", bytes_of(lines)))
    return Error{python_error("assemble: building code.replace() arguments")};
  PyRef replace = PyRef::steal(PyObject_GetAttrString(tmpl, "replace"));
  PyRef empty = PyRef::steal(PyTuple_New(0));
  if (!replace || !empty) return Error{python_error("assemble: code.replace")};
  PyRef result = PyRef::steal(PyObject_Call(replace.get(), empty.get(), kwargs.get()));
  if (!result) return Error{python_error("assemble: code.replace() failed")};
  return result;
}

}  // namespace tj::bc
