// Spellings of dtypes, layouts and memory formats, as tables: the short
// form of the printer (`f32`) and the Python form of the codegen and the
// printer's constants (`torch.float32`), with their inverses for the parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

namespace tj::graph {

std::string_view dtype_short_name(c10::ScalarType t);   // "f32"
std::string_view dtype_python_name(c10::ScalarType t);  // "float32" (after "torch.")
std::optional<c10::ScalarType> dtype_from_short_name(std::string_view s);
std::optional<c10::ScalarType> dtype_from_python_name(std::string_view s);

std::string_view layout_python_name(c10::Layout l);           // "strided"
std::string_view memory_format_python_name(c10::MemoryFormat m);  // "contiguous_format"
std::optional<c10::Layout> layout_from_python_name(std::string_view s);
std::optional<c10::MemoryFormat> memory_format_from_python_name(std::string_view s);

}  // namespace tj::graph
