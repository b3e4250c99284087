// A list input the frame only appends to (issue 42: `losses.append(loss)`,
// `self.history.append(x)` in a training step). Wrapped as a list value, it
// is guarded by its length and items, so a list that grows by one each call
// fails its guard each call: the step recompiled until the cache limit and
// then ran uncompiled. Read straight into `.append` (the load's next
// instruction is LOAD_METHOD append; input_wrapping.cpp), it is instead an
// object value (its type guarded) that logs what the trace appends in
// `items` (translate_call.cpp); after the graph the runtime extends the
// real list with them (a replace_list side effect named "extend",
// output_planner.cpp). Any other use of the same list in the trace (a
// second load not followed by `.append`, through any source) first makes it
// a full list value: its contents wrapped and guarded as before, the logged
// values after them. Logs are told by their values' birth stamps, so a
// journal entry restored by a graph break (Value copies keep the stamp)
// restores a log with the values logged so far. A dict input loaded
// straight into `d["k"].append(x)` (a training loop's `log["losses"]`) has
// its list items wrapped as such logs; any other load of the dict makes
// them full list values first (input_wrapping.cpp).
#include "tracer/append_log.h"

#include <string_view>
#include <unordered_set>

namespace tj::tracer {

namespace {

using O = bc::Opcode;

// The birth stamps of log values (unique per value made; never reused).
std::unordered_set<uint64_t>& log_births() {
  static auto* births = new std::unordered_set<uint64_t>();  // the GIL holder's: traces run under the GIL
  return *births;
}

bool is_load(O code) {
  // Loads whose every later read wraps again (globals, attributes) or
  // passes InstructionTranslator::load_local (arguments); not cells.
  return code == O::LOAD_GLOBAL || code == O::LOAD_ATTR || code == O::LOAD_FAST;
}

bool is_append(const bc::Instruction& inst) {
  if (inst.code() != O::LOAD_METHOD || !inst.argval || !PyUnicode_Check(inst.argval.get())) return false;
  const char* name = PyUnicode_AsUTF8(inst.argval.get());
  if (!name) PyErr_Clear();
  return name && std::string_view(name) == "append";
}

}  // namespace

bool is_append_log(const Value& v) { return v.kind == ValueKind::object && log_births().count(v.birth) > 0; }

bool has_append_logs(const Value& v) {
  if (v.kind != ValueKind::dict) return false;
  for (const ValuePtr& item : v.items)
    if (item && is_append_log(*item)) return true;
  return false;
}

bool loads_for_append(const bc::DecodedCode* code, size_t ip, const bc::Instruction* current) {
  if (!code || !current || !is_load(current->code()) || ip + 1 >= code->instructions.size()) return false;
  return code->instructions[ip].get() == current && is_append(*code->instructions[ip + 1]);
}

bool loads_dict_for_append(const bc::DecodedCode* code, size_t ip, const bc::Instruction* current) {
  if (!code || !current || !is_load(current->code()) || ip + 3 >= code->instructions.size()) return false;
  if (code->instructions[ip].get() != current) return false;
  const bc::Instruction& key = *code->instructions[ip + 1];
  return key.code() == O::LOAD_CONST && key.argval && PyUnicode_CheckExact(key.argval.get()) &&
         code->instructions[ip + 2]->code() == O::BINARY_SUBSCR && is_append(*code->instructions[ip + 3]);
}

ValuePtr new_append_log(GuardSet& guards, PyObject* obj, const SourcePtr& source) {
  guards.add(Guard{GuardKind::type_match, source, PyRef::borrow(reinterpret_cast<PyObject*>(&PyList_Type))});
  ValuePtr v = Value::object(obj);
  v->source = source;
  log_births().insert(v->birth);
  return v;
}

void materialize_append_log(const ValuePtr& v, const ValuePtr& full) {
  std::vector<ValuePtr> items = full->items;
  items.insert(items.end(), v->items.begin(), v->items.end());
  v->kind = ValueKind::list;
  v->items = std::move(items);
}

}  // namespace tj::tracer
