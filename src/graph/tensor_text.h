// Tensor data as text: the bytes of the contiguous tensor in hex, in
// memory order (little-endian on every machine we run on). Used by the
// graph serialization for attribute tensors and by tests that hand tensors
// to a separate Python process.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "support/expected.h"

namespace tj::graph {

std::string tensor_to_hex(const at::Tensor& t);  // CPU tensors
Expected<at::Tensor> tensor_from_hex(std::string_view hex, const std::vector<int64_t>& sizes, c10::ScalarType dtype);

}  // namespace tj::graph
