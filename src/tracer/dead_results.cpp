// Results a frame never reads (issue 42: PPO's `clipfrac = (...).item()`,
// kept for logging that the step does not do). The frame's code is scanned
// as CPython 3.11 stores it (`co_code`: deoptimized, inline caches zeroed):
// the local's slot is read by LOAD_FAST and deleted by DELETE_FAST, the only
// ways to reach a plain fast local; cells are refused outright.
#include <cstdint>

#include "support/py_ref.h"
#include "tracer/dead_results.h"
#include "tracer/liveness.h"
#include "tracer/opcodes.h"

namespace tj::tracer {

bool result_never_read(TraceContext cx) {
  const bc::Instruction* next = cx.next_instruction();
  if (!next) return false;
  if (next->code() == bc::Opcode::POP_TOP) return true;
  if (next->code() != bc::Opcode::STORE_FAST) return false;
  PyCodeObject* code = cx.frame_code();
  const int slot = next->arg;
  if (!code || slot < 0 || slot >= code->co_nlocalsplus || may_read_all_locals(code) ||
      (slot == 0 && super_reads_first_local(code)))
    return false;
  const char* kinds = PyBytes_AsString(code->co_localspluskinds);
  constexpr char kFastCell = 0x40, kFastFree = static_cast<char>(0x80);  // CPython 3.11 localsplus kinds
  if (!kinds || (kinds[slot] & (kFastCell | kFastFree))) return PyErr_Clear(), false;
  PyRef bytes = PyRef::steal(PyCode_GetCode(code));
  if (!bytes || !PyBytes_Check(bytes.get())) return PyErr_Clear(), false;
  const auto* units = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytes.get()));
  const Py_ssize_t size = PyBytes_GET_SIZE(bytes.get());
  int extended = 0;
  for (Py_ssize_t i = 0; i + 1 < size; i += 2) {
    const int op = units[i], arg = units[i + 1] | extended;
    extended = op == bc::kExtendedArg ? arg << 8 : 0;
    if ((op == static_cast<int>(bc::Opcode::LOAD_FAST) || op == static_cast<int>(bc::Opcode::DELETE_FAST)) &&
        arg == slot)
      return false;
  }
  return true;
}

}  // namespace tj::tracer
