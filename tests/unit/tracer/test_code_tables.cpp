// The exception-table and line-table codecs (src/tracer/code_tables.cpp):
// encode/decode round trips over every entry form and varint length, and
// agreement with `dis._parse_exception_table` and `code.co_positions()`.
#include <gtest/gtest.h>

#include "py_test_util.h"
#include "tracer/code_tables.h"

namespace tj::bc {
namespace {

using testing::eval_long;
using testing::eval_python;
using testing::run_python;

std::span<const uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(ExceptionTable, RoundTripsAllVarintLengths) {
  std::vector<RawExceptionEntry> entries = {
      {0, 2, 4, 0, false},
      {4, 130, 200, 1, true},                  // length 63 units: one byte
      {130, 134, 2 * 64, 2, false},            // target 64 units: two bytes
      {2 * 5000, 2 * 9000, 2 * 70000, 31, true},  // three-byte values
      {2 * 300000, 2 * 300001, 2 * 300002, 1000, false},  // four bytes (>= 1<<18)
      {2 * 20000000, 2 * 20000001, 2, 3, true},          // five bytes (>= 1<<24)
  };
  std::string encoded = encode_exception_table(entries);
  EXPECT_EQ(parse_exception_table(as_span(encoded)), entries);
  // Every entry starts with a byte that has 0x80 set, and only there.
  int starts = 0;
  for (char c : encoded) starts += (static_cast<uint8_t>(c) & 0x80) ? 1 : 0;
  EXPECT_EQ(starts, static_cast<int>(entries.size()));
}

TEST(ExceptionTable, AgreesWithDis) {
  std::vector<RawExceptionEntry> entries = {{2, 40, 44, 0, false}, {44, 52, 1000, 3, true},
                                            {60, 10000, 20000, 7, false}};
  std::string encoded = encode_exception_table(entries);
  PyRef ns = run_python("import dis, types\n");
  PyRef bytes = PyRef::steal(PyBytes_FromStringAndSize(encoded.data(), encoded.size()));
  PyDict_SetItemString(ns.get(), "table", bytes.get());
  PyRef parsed = eval_python(
      ns.get(), "[tuple(e) for e in dis._parse_exception_table("
                "types.SimpleNamespace(co_exceptiontable=table))]");
  ASSERT_TRUE(parsed);
  ASSERT_EQ(PyList_GET_SIZE(parsed.get()), 3);
  for (size_t i = 0; i < entries.size(); ++i) {
    PyObject* row = PyList_GET_ITEM(parsed.get(), i);
    EXPECT_EQ(PyLong_AsLong(PyTuple_GET_ITEM(row, 0)), entries[i].start);
    EXPECT_EQ(PyLong_AsLong(PyTuple_GET_ITEM(row, 1)), entries[i].end);
    EXPECT_EQ(PyLong_AsLong(PyTuple_GET_ITEM(row, 2)), entries[i].target);
    EXPECT_EQ(PyLong_AsLong(PyTuple_GET_ITEM(row, 3)), entries[i].depth);
    EXPECT_EQ(PyTuple_GET_ITEM(row, 4) == Py_True, entries[i].lasti);
  }
}

TEST(ExceptionTable, TruncatedTrailingEntryIsDropped) {
  std::string encoded = encode_exception_table(std::vector<RawExceptionEntry>{{0, 2, 4, 0, false}});
  encoded += encoded.substr(0, 2);
  EXPECT_EQ(parse_exception_table(as_span(encoded)).size(), 1u);
}

// Encodes one instruction per position, `units` code units each.
std::string encode_positions(const std::vector<Position>& positions, int units, int first_line) {
  std::string table;
  int line = first_line;
  for (const Position& p : positions) append_location(table, line, p, units);
  return table;
}

std::vector<Position> expand(const std::vector<Position>& positions, int units) {
  std::vector<Position> out;
  for (const Position& p : positions) out.insert(out.end(), static_cast<size_t>(units), p);
  return out;
}

TEST(LineTable, RoundTripsEveryForm) {
  const int first = 10;
  std::vector<Position> positions = {
      {10, 10, 4, 9},      // short form (same line, col < 80, width < 16)
      {11, 11, 0, 120},    // one-line form, delta 1
      {13, 13, 100, 127},  // one-line form, delta 2
      {13, 13, 200, 300},  // long form (columns >= 128)
      {12, 12, -1, -1},    // no columns, negative delta
      {-1, -1, -1, -1},    // no location
      {12, 15, 3, 1},      // long form, several lines
      {5000, 5000, 1, 2},  // long form, big delta
      {4, 4, -1, -1},      // no columns, big negative delta
  };
  for (int units : {1, 3, 8, 11, 20}) {
    SCOPED_TRACE(units);
    std::string table = encode_positions(positions, units, first);
    std::vector<Position> parsed =
        parse_line_table(as_span(table), first, positions.size() * static_cast<size_t>(units));
    EXPECT_EQ(parsed, expand(positions, units));
  }
}

TEST(LineTable, UsesTheCompactestForm) {
  std::string table;
  int line = 1;
  append_location(table, line, Position{1, 1, 4, 8}, 1);  // short: two bytes
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(table[0]), 0x80);
  EXPECT_EQ(static_cast<uint8_t>(table[1]), 0x44);
  table.clear();
  append_location(table, line, Position{2, 2, 4, 8}, 1);  // one-line, delta 1
  EXPECT_EQ(table, std::string("\xd8\x04\x08", 3));
  EXPECT_EQ(line, 2);
  table.clear();
  append_location(table, line, Position{2, 2, 0, 0}, 11);  // split into 8 + 3 units
  EXPECT_EQ(table, std::string("\x87\x00\x82\x00", 4));
}

TEST(LineTable, AgreesWithCoPositions) {
  PyRef ns = run_python(
      "def f(a, b):\n"
      "    x = [a,\n"
      "         b]\n"
      "    return (x, a + b,\n"
      "            " + std::string(150, ' ') + "a)\n"
      "code = f.__code__\n");
  PyRef code = eval_python(ns.get(), "code");
  PyCodeObject* co = reinterpret_cast<PyCodeObject*>(code.get());
  std::vector<Position> parsed = parse_line_table(
      {reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(co->co_linetable)),
       static_cast<size_t>(PyBytes_GET_SIZE(co->co_linetable))},
      co->co_firstlineno, static_cast<size_t>(Py_SIZE(co)));
  PyRef expected = eval_python(
      ns.get(), "[tuple(-1 if v is None else v for v in p) for p in code.co_positions()]");
  ASSERT_EQ(static_cast<Py_ssize_t>(parsed.size()), PyList_GET_SIZE(expected.get()));
  for (size_t i = 0; i < parsed.size(); ++i) {
    PyObject* row = PyList_GET_ITEM(expected.get(), i);
    Position want{static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(row, 0))),
                  static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(row, 1))),
                  static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(row, 2))),
                  static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(row, 3)))};
    EXPECT_EQ(parsed[i], want) << "code unit " << i;
  }
  EXPECT_GT(eval_long(ns.get(), "max(p[3] or 0 for p in code.co_positions())"), 128)
      << "the function exercises the long form";
}

}  // namespace
}  // namespace tj::bc
