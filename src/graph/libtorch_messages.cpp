// LibTorch's error texts that tracejit classifies by; see libtorch_messages.h.
#include "graph/libtorch_messages.h"

namespace tj::graph {

namespace {
bool contains(const std::string& text, const char* words) { return text.find(words) != std::string::npos; }
}  // namespace

bool says_leaf_modified_inplace(const std::string& what) {
  return contains(what, "leaf Variable that requires grad");
}

bool says_autograd_refused_inplace(const std::string& what) {
  return contains(what, "is being modified inplace") || says_leaf_modified_inplace(what);
}

bool says_derivative_not_implemented(const std::string& what) {
  return contains(what, "derivative for ") && contains(what, " is not implemented");
}

bool says_invalid_shape(const std::string& what) {
  return what.starts_with("shape '") && contains(what, "' is invalid for input of size ");
}

}  // namespace tj::graph
