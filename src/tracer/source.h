// Sources: where a value the tracer read came from, as a small immutable
// tree (a local, a global, a closure cell, an attribute or item of another
// source). Guards are checked on sources; the transformed code loads graph
// inputs from them. `name()` is the printed form used by guards and logs:
// L['x'], G['torch'], C['k'], Cell['k'], L['self'].weight, L['xs'][0],
// sys.modules['pkg.helpers'].
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <string>

#include "support/py_ref.h"

namespace tj::tracer {

// module: `sys.modules[name]` (a user module imported inside the traced code);
// call: `base.name()` of a method without arguments and without effects
// (`cls.__subclasses__()`).
enum class SourceKind { local, global, closure, closure_cell, attr, item, module, call };

struct Source;
using SourcePtr = std::shared_ptr<const Source>;

struct Source {
  SourceKind kind;
  std::string name;     // local/global/closure variable name, the attribute, the module or the method
  int index = -1;       // local: localsplus index; closure: index in func_closure; item: int index
  PyRef key;        // item: the constant key (int or str); global/attr/module: the interned name (strong)
  SourcePtr base;       // attr/item/call

  static SourcePtr local(int index, std::string name);
  static SourcePtr global(std::string name);
  static SourcePtr module(std::string name);
  static SourcePtr call(SourcePtr base, std::string method);  // null when `base` is
  static SourcePtr closure(int index, std::string name);
  // The cell object itself (not its content), e.g. to assign cell_contents.
  static SourcePtr closure_cell(int index, std::string name);
  // Null when `base` is null (a value read without a source).
  static SourcePtr attr(SourcePtr base, std::string name);
  static SourcePtr item(SourcePtr base, PyObject* key);  // key borrowed
  // An item under a key printed as `label` (a tensor key: its repr would
  // print its data): `L['opt'].state[<key 0: Tensor>]`.
  static SourcePtr item(SourcePtr base, PyObject* key, std::string label);

  // The readable path (`L['self']._modules['fc']`), built once: sources
  // are immutable, and guards and the value cache key on this text.
  const std::string& to_string() const;

  mutable std::string text_;  // to_string()'s cache; empty until first asked
};

}  // namespace tj::tracer
