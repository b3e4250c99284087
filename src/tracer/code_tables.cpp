// Readers and writers of co_exceptiontable and co_linetable (formats in
// code_tables.h). The writers mirror Python/compile.c (3.11)
// `assemble_emit_exception_table_entry` and `write_location_info_entry`
// choice for choice, which is what makes decode -> assemble byte-exact.
#include "tracer/code_tables.h"

#include <algorithm>
#include <cassert>

namespace tj::bc {
namespace {

// ---- exception table: big-endian 6-bit varints --------------------------

constexpr uint8_t kContinuation = 0x40;
constexpr uint8_t kEntryStart = 0x80;

// Reads one varint at `pos`; false if the table ends first.
bool read_except_varint(std::span<const uint8_t> table, size_t& pos, int& value) {
  if (pos >= table.size()) return false;
  uint8_t b = table[pos++];
  value = b & 63;
  while (b & kContinuation) {
    if (pos >= table.size()) return false;
    b = table[pos++];
    value = (value << 6) | (b & 63);
  }
  return true;
}

void write_except_varint(std::string& out, int value, uint8_t msb) {
  assert(value >= 0 && value < (1 << 30) && "exception table value out of range");
  for (int shift = 24; shift > 0; shift -= 6) {
    if (value >= (1 << shift)) {
      out.push_back(static_cast<char>(((value >> shift) & 63) | kContinuation | msb));
      msb = 0;
    }
  }
  out.push_back(static_cast<char>((value & 63) | msb));
}

// ---- location table: little-endian 6-bit varints -------------------------

enum LocationCode : int {
  kShort0 = 0,
  kOneLine0 = 10,
  kNoColumns = 13,
  kLong = 14,
  kNone = 15,
};

struct LineReader {
  std::span<const uint8_t> table;
  size_t pos = 0;
  uint8_t byte() { return pos < table.size() ? table[pos++] : 0; }
  unsigned varint() {
    unsigned read = byte();
    unsigned value = read & 63;
    unsigned shift = 0;
    while (read & 64) {
      read = byte();
      shift += 6;
      value |= (read & 63) << shift;
    }
    return value;
  }
  int signed_varint() {
    unsigned u = varint();
    return (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
  }
};

void write_varint(std::string& out, unsigned value) {
  while (value >= 64) {
    out.push_back(static_cast<char>(64 | (value & 63)));
    value >>= 6;
  }
  out.push_back(static_cast<char>(value));
}

void write_signed_varint(std::string& out, int value) {
  unsigned u = value < 0 ? ((0u - static_cast<unsigned>(value)) << 1) | 1u
                         : static_cast<unsigned>(value) << 1;
  write_varint(out, u);
}

void write_first_byte(std::string& out, int code, int units) {
  assert(units >= 1 && units <= 8);
  out.push_back(static_cast<char>(0x80 | (code << 3) | (units - 1)));
}

// One entry of at most 8 code units (compile.c write_location_info_entry).
void write_entry(std::string& out, int& prev_line, const Position& pos, int units) {
  if (pos.line < 0) {
    write_first_byte(out, kNone, units);
    return;
  }
  int line_delta = pos.line - prev_line;
  int column = pos.col;
  int end_col = pos.end_col;
  int end_line = std::max(pos.end_line, pos.line);
  if (end_line == pos.line) {
    if (column < 0 || end_col < 0) {
      write_first_byte(out, kNoColumns, units);
      write_signed_varint(out, line_delta);
      prev_line = pos.line;
      return;
    }
    if (line_delta == 0 && column < 80 && end_col - column < 16 && end_col >= column) {
      write_first_byte(out, kShort0 + (column >> 3), units);
      out.push_back(static_cast<char>(((column & 7) << 4) | (end_col - column)));
      return;
    }
    if (line_delta >= 0 && line_delta < 3 && column < 128 && end_col < 128) {
      write_first_byte(out, kOneLine0 + line_delta, units);
      out.push_back(static_cast<char>(column));
      out.push_back(static_cast<char>(end_col));
      prev_line = pos.line;
      return;
    }
  }
  write_first_byte(out, kLong, units);
  write_signed_varint(out, line_delta);
  write_varint(out, static_cast<unsigned>(end_line - pos.line));
  write_varint(out, static_cast<unsigned>(column + 1));
  write_varint(out, static_cast<unsigned>(end_col + 1));
  prev_line = pos.line;
}

}  // namespace

std::vector<RawExceptionEntry> parse_exception_table(std::span<const uint8_t> table) {
  std::vector<RawExceptionEntry> entries;
  size_t pos = 0;
  for (;;) {
    int start, length, target, depth_lasti;
    if (!read_except_varint(table, pos, start) || !read_except_varint(table, pos, length) ||
        !read_except_varint(table, pos, target) || !read_except_varint(table, pos, depth_lasti))
      return entries;
    entries.push_back(RawExceptionEntry{start * 2, (start + length) * 2, target * 2,
                                        depth_lasti >> 1, (depth_lasti & 1) != 0});
  }
}

std::string encode_exception_table(std::span<const RawExceptionEntry> entries) {
  std::string out;
  for (const RawExceptionEntry& e : entries) {
    assert(e.end > e.start && e.start % 2 == 0 && e.end % 2 == 0 && e.target % 2 == 0);
    write_except_varint(out, e.start / 2, kEntryStart);
    write_except_varint(out, (e.end - e.start) / 2, 0);
    write_except_varint(out, e.target / 2, 0);
    write_except_varint(out, (e.depth << 1) | (e.lasti ? 1 : 0), 0);
  }
  return out;
}

std::vector<Position> parse_line_table(std::span<const uint8_t> table, int first_line,
                                       size_t code_units) {
  std::vector<Position> out;
  out.reserve(code_units);
  LineReader r{table};
  int line = first_line;
  while (r.pos < table.size() && out.size() < code_units) {
    uint8_t first = r.byte();
    int code = (first >> 3) & 15;
    int units = (first & 7) + 1;
    Position p;
    if (code == kNone) {
      // line stays -1; the running line is unchanged
    } else if (code == kLong) {
      line += r.signed_varint();
      p.line = line;
      p.end_line = line + static_cast<int>(r.varint());
      p.col = static_cast<int>(r.varint()) - 1;
      p.end_col = static_cast<int>(r.varint()) - 1;
    } else if (code == kNoColumns) {
      line += r.signed_varint();
      p.line = p.end_line = line;
    } else if (code >= kOneLine0) {
      line += code - kOneLine0;
      p.line = p.end_line = line;
      p.col = r.byte();
      p.end_col = r.byte();
    } else {
      uint8_t second = r.byte();
      p.line = p.end_line = line;
      p.col = (code << 3) | (second >> 4);
      p.end_col = p.col + (second & 15);
    }
    for (int i = 0; i < units && out.size() < code_units; ++i) out.push_back(p);
  }
  out.resize(code_units);  // units the table does not cover: no location
  return out;
}

void append_location(std::string& table, int& prev_line, const Position& pos, int units) {
  assert(units > 0);
  while (units > 8) {
    write_entry(table, prev_line, pos, 8);
    units -= 8;
  }
  write_entry(table, prev_line, pos, units);
}

}  // namespace tj::bc
