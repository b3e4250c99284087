// Per-code-object cache state in co_extra; see code_cache.h.
#include "runtime/code_cache.h"

namespace tj::runtime {

namespace {
uint64_t g_epoch = 1;
}

uint64_t cache_epoch() { return g_epoch; }
void bump_cache_epoch() { ++g_epoch; }

CodeState::~CodeState() { clear(); }

void CodeState::clear() {
  entries.clear();  // each entry releases its code
  skip_reason.clear();
  skip_is_unsupported = false;
  warned_cache_limit = false;
  automatic_dynamic.clear();
  dynamic_ints = {};
  if (mode != CodeMode::never) mode = CodeMode::unknown;
}

std::vector<size_t> add_automatic_dims(std::unordered_map<std::string, std::vector<bool>>& automatic,
                                       const std::string& source, const std::vector<bool>& dims) {
  auto& known = automatic[source];
  if (known.size() != dims.size()) known.assign(dims.size(), false);
  std::vector<size_t> added;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] && !known[d]) {
      known[d] = true;
      added.push_back(d);
    }
  return added;
}

extern "C" void free_code_state(void* state) { delete static_cast<CodeState*>(state); }

CodeState* code_state(PyCodeObject* code, void* extra) {
  auto* state = static_cast<CodeState*>(extra);
  if (state == nullptr) {
    state = new CodeState();
    state->epoch = g_epoch;
    if (_PyCode_SetExtra(reinterpret_cast<PyObject*>(code), tj_code_extra_index(), state) < 0) {
      delete state;
      return nullptr;
    }
    return state;
  }
  if (state->epoch != g_epoch) {
    state->clear();
    state->epoch = g_epoch;
  }
  return state;
}

CodeState* code_state(PyCodeObject* code) {
  void* extra = nullptr;
  if (_PyCode_GetExtra(reinterpret_cast<PyObject*>(code), tj_code_extra_index(), &extra) < 0) return nullptr;
  return code_state(code, extra);
}

void mark_never_traced(PyCodeObject* code) {
  if (CodeState* state = code_state(code)) state->mode = CodeMode::never;
}

}  // namespace tj::runtime
