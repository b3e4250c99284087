// Live fast locals; see liveness.h.
#include "tracer/liveness.h"

#include <unordered_map>

namespace tj::tracer {

std::vector<std::vector<bool>> live_locals(const bc::InstructionList& code, int nlocalsplus) {
  const size_t n = code.size();
  std::unordered_map<const bc::Instruction*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[code[i].get()] = i;

  auto slot_op = [](bc::Opcode op, bool* use, bool* def) {
    using O = bc::Opcode;
    *use = op == O::LOAD_FAST || op == O::LOAD_DEREF || op == O::LOAD_CLOSURE || op == O::LOAD_CLASSDEREF;
    *def = op == O::STORE_FAST || op == O::DELETE_FAST || op == O::STORE_DEREF;
  };

  std::vector<std::vector<bool>> live(n + 1, std::vector<bool>(static_cast<size_t>(nlocalsplus), false));
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = n; k-- > 0;) {
      const bc::Instruction& inst = *code[k];
      std::vector<bool> out(static_cast<size_t>(nlocalsplus), false);
      auto merge = [&](size_t succ) {
        for (size_t s = 0; s < out.size(); ++s) out[s] = out[s] || live[succ][s];
      };
      if (!inst.info().terminates && k + 1 < n) merge(k + 1);
      if (inst.target) merge(index.at(inst.target));
      if (inst.handler && inst.handler->target) merge(index.at(inst.handler->target));
      bool use = false, def = false;
      slot_op(inst.code(), &use, &def);
      if (def && inst.arg < nlocalsplus) out[static_cast<size_t>(inst.arg)] = false;
      if (use && inst.arg < nlocalsplus) out[static_cast<size_t>(inst.arg)] = true;
      if (out != live[k]) {
        live[k] = std::move(out);
        changed = true;
      }
    }
  }
  live.resize(n);
  return live;
}

bool may_read_all_locals(PyCodeObject* code) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(code->co_names); ++i) {
    PyObject* name = PyTuple_GET_ITEM(code->co_names, i);
    if (PyUnicode_CompareWithASCIIString(name, "locals") == 0 || PyUnicode_CompareWithASCIIString(name, "vars") == 0)
      return true;
  }
  return false;
}

bool super_reads_first_local(PyCodeObject* code) {
  if (code->co_argcount < 1) return false;  // super(): "no arguments", as eager
  for (int slot = code->co_nlocalsplus - code->co_nfreevars; slot < code->co_nlocalsplus; ++slot)
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(code->co_localsplusnames, slot), "__class__") == 0)
      return true;
  return false;
}

}  // namespace tj::tracer
