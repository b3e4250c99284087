// The two compact side tables of a 3.11 code object, as raw formats.
//
// Exception table (`co_exceptiontable`, Objects/exception_handling_notes.txt):
// a sequence of entries (start, length, target, depth<<1 | lasti), each
// field a big-endian varint of 6-bit groups with 0x40 as the continuation
// bit and 0x80 marking the first byte of an entry; positions are in code
// units. `RawExceptionEntry` uses byte offsets and an exclusive end, like
// `dis._parse_exception_table`.
//
// Location table (`co_linetable`, Objects/locations.md): one or more entries
// per instruction, each covering 1..8 code units; the first byte is
// 0x80 | code<<3 | (units-1), where code 0-9 is the short form (same line,
// column group + one byte), 10-12 one-line forms (line delta 0..2, start and
// end column bytes), 13 no columns (signed varint line delta), 14 the long
// form (line delta, end-line delta, column+1, end column+1 as varints) and
// 15 no location. Varints here are little-endian 6-bit groups. Lines are
// deltas from the previous entry's line, starting at co_firstlineno.
// `append_location` makes the same choice of form as CPython's assembler,
// so re-encoding the decoded positions gives back the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tj::bc {

struct RawExceptionEntry {
  int start = 0;   // byte offset of the first covered code unit
  int end = 0;     // byte offset just past the last covered code unit
  int target = 0;  // byte offset of the handler
  int depth = 0;   // stack depth to unwind to
  bool lasti = false;  // push the offset of the raising instruction first
  bool operator==(const RawExceptionEntry&) const = default;
};

// Decodes co_exceptiontable. Stops quietly at a truncated trailing entry,
// as `dis` does.
std::vector<RawExceptionEntry> parse_exception_table(std::span<const uint8_t> table);
// Encodes entries (in order; byte offsets must be even) as co_exceptiontable.
std::string encode_exception_table(std::span<const RawExceptionEntry> entries);

// A source span; -1 means "none" (co_positions() gives None). An
// instruction without location has line == -1.
struct Position {
  int line = -1;
  int end_line = -1;
  int col = -1;
  int end_col = -1;
  bool operator==(const Position&) const = default;
};

// The position of every code unit of a code object of `code_units` units,
// from co_linetable; units past the table's end get no location. Equals
// `list(code.co_positions())`.
std::vector<Position> parse_line_table(std::span<const uint8_t> table, int first_line,
                                       size_t code_units);

// Appends the entries for one instruction of `units` code units at `pos`.
// `prev_line` is the line the decoder will have reached before this entry
// (start with co_firstlineno) and is updated.
void append_location(std::string& table, int& prev_line, const Position& pos, int units);

}  // namespace tj::bc
