// Hex encoding of tensor data; see tensor_text.h.
#include "graph/tensor_text.h"

#include <cstring>

#include <ATen/ops/empty.h>

namespace tj::graph {

std::string tensor_to_hex(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  size_t n = c.numel() * c.element_size();
  static const char* digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

Expected<at::Tensor> tensor_from_hex(std::string_view hex, const std::vector<int64_t>& sizes, c10::ScalarType dtype) {
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(dtype));
  size_t n = t.numel() * t.element_size();
  if (hex.size() != 2 * n)
    return Error{"tensor data has " + std::to_string(hex.size() / 2) + " bytes, expected " + std::to_string(n)};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  auto* bytes = static_cast<unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < n; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error{"tensor data is not hex"};
    bytes[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return t;
}

}  // namespace tj::graph
