// The spelling tables of type_names.h.
#include "graph/type_names.h"

#include <array>

namespace tj::graph {

namespace {

struct DtypeName {
  c10::ScalarType type;
  const char* short_name;
  const char* python_name;
};

constexpr std::array<DtypeName, 13> kDtypes = {{
    {c10::ScalarType::Float, "f32", "float32"},
    {c10::ScalarType::Double, "f64", "float64"},
    {c10::ScalarType::Half, "f16", "float16"},
    {c10::ScalarType::BFloat16, "bf16", "bfloat16"},
    {c10::ScalarType::Long, "i64", "int64"},
    {c10::ScalarType::Int, "i32", "int32"},
    {c10::ScalarType::Short, "i16", "int16"},
    {c10::ScalarType::Char, "i8", "int8"},
    {c10::ScalarType::Byte, "u8", "uint8"},
    {c10::ScalarType::Bool, "b8", "bool"},
    {c10::ScalarType::ComplexHalf, "c32", "complex32"},
    {c10::ScalarType::ComplexFloat, "c64", "complex64"},
    {c10::ScalarType::ComplexDouble, "c128", "complex128"},
}};

struct LayoutName {
  c10::Layout layout;
  const char* name;
};
constexpr std::array<LayoutName, 2> kLayouts = {{{c10::Layout::Strided, "strided"}, {c10::Layout::Sparse, "sparse_coo"}}};

struct FormatName {
  c10::MemoryFormat format;
  const char* name;
};
constexpr std::array<FormatName, 4> kFormats = {{
    {c10::MemoryFormat::Contiguous, "contiguous_format"},
    {c10::MemoryFormat::ChannelsLast, "channels_last"},
    {c10::MemoryFormat::ChannelsLast3d, "channels_last_3d"},
    {c10::MemoryFormat::Preserve, "preserve_format"},
}};

}  // namespace

std::string_view dtype_short_name(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.short_name;
  return "unknown_dtype";
}

std::string_view dtype_python_name(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.python_name;
  return "unknown_dtype";
}

std::optional<c10::ScalarType> dtype_from_short_name(std::string_view s) {
  for (const auto& d : kDtypes)
    if (s == d.short_name) return d.type;
  return std::nullopt;
}

std::optional<c10::ScalarType> dtype_from_python_name(std::string_view s) {
  for (const auto& d : kDtypes)
    if (s == d.python_name) return d.type;
  return std::nullopt;
}

std::string_view layout_python_name(c10::Layout l) {
  for (const auto& x : kLayouts)
    if (x.layout == l) return x.name;
  return "unknown_layout";
}

std::string_view memory_format_python_name(c10::MemoryFormat m) {
  for (const auto& x : kFormats)
    if (x.format == m) return x.name;
  return "unknown_memory_format";
}

std::optional<c10::Layout> layout_from_python_name(std::string_view s) {
  for (const auto& x : kLayouts)
    if (s == x.name) return x.layout;
  return std::nullopt;
}

std::optional<c10::MemoryFormat> memory_format_from_python_name(std::string_view s) {
  for (const auto& x : kFormats)
    if (s == x.name) return x.format;
  return std::nullopt;
}

}  // namespace tj::graph
