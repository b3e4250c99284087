// Internal to src/graph: turns a call_function node's args and kwargs into
// the boxed argument stack its schema expects, and the returned stack back
// into one value. Shared by the interpreter (real tensors) and meta
// inference (meta tensors), so both see exactly the same call.
//
// Conversions follow eager PyTorch: a Python number passed to a Tensor
// parameter becomes a 0-dim "wrapped number" CPU tensor; an int passed to an
// `int[N]` parameter is repeated N times; an int passed to a float parameter
// becomes a float; dtype, layout and memory format travel as ints.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/ivalue.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph::detail {

// The value a node input has in the current run.
using ValueOf = std::function<const c10::IValue&(const Node*)>;

struct BoxOptions {
  // Replace every Device argument by the meta device (factory functions),
  // reporting the device asked for in `requested_device`.
  bool meta_devices = false;
  std::optional<c10::Device>* requested_device = nullptr;
};

Expected<std::vector<c10::IValue>> box_arguments(const Node& node, const ValueOf& value_of,
                                                 const BoxOptions& options = {});

// The node's value from the stack left by callBoxed: the single return, or a
// tuple of all returns.
c10::IValue unbox_returns(const Node& node, std::vector<c10::IValue>& stack);

// A schema-free conversion (for the output node): lists become generic
// lists, tuples tuples, dtype/layout/memory format ints.
Expected<c10::IValue> arg_to_ivalue(const Arg& arg, const ValueOf& value_of);

// getitem(sequence, index) on a tuple or list value.
Expected<c10::IValue> run_getitem(const Node& node, const ValueOf& value_of);

// The first line of a c10::Error's message (without the backtrace / key list).
std::string short_message(const std::exception& e);

// What a caught exception says about whose error it is: LibTorch's
// c10::Error (an op's check, which eager meets too) and std::bad_alloc are
// ErrorKind::unsupported; anything else thrown is a bug of ours,
// ErrorKind::internal (support/internal_error.h).
ErrorKind exception_kind(const std::exception& e);

// `prefix` + short_message(e), of exception_kind(e).
Error exception_error(const std::string& prefix, const std::exception& e);

}  // namespace tj::graph::detail
