// Golden text tests of the compile half, as MLIR's FileCheck tests: graph
// text in, one transformation, text out. Each file of golden/ names its
// transformation on a `# RUN:` line and holds many small cases:
//
//   # CASE: name
//   <a graph in the text format (graph/text_format.h): types may be `?`,
//    meta inference fills them>
//   # CHECK:
//   <the expected text>
//
// Transformations: the graph passes (`dce`, `cse`, `fold_constants`,
// `decompose_for_fusion`, `expose_unused_results`), AOT's partition of a
// joint graph (`partition forward_outputs=N`: the placeholders named
// `tangents_*` are the tangents, the others primals; prints the forward and
// backward graphs) and the lowering's kernels as the loop-IR printer shows
// them (`kernels`: every step of the program, a kernel as
// loop::print_kernel prints it). Lines starting with `#` before the first
// case describe the file. TRACEJIT_UPDATE_GOLDEN=1 rewrites every CHECK
// section with what the code prints now, so reviewing a change is reading
// the diff (git diff tests/unit/compile/golden).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compile/aot/partition.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/passes/constant_fold.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/decompose.h"
#include "graph/passes/unused_results.h"
#include "graph/printer.h"
#include "graph/text_format.h"
#include "jit/lowering.h"
#include "tracejit_build_config.h"

namespace tj {
namespace {

const std::filesystem::path kGoldenDir = std::filesystem::path(TRACEJIT_SOURCE_ROOT) / "tests/unit/compile/golden";

struct Case {
  std::string name;
  std::string input;
  std::string expected;
};

struct GoldenFile {
  std::string header;  // up to the first case: the RUN line and comments
  std::string run;     // what follows "# RUN: "
  std::vector<Case> cases;
};

GoldenFile read_golden(const std::filesystem::path& path) {
  std::ifstream in(path);
  GoldenFile file;
  std::string line;
  Case* current = nullptr;
  bool in_check = false;
  while (std::getline(in, line)) {
    if (line.rfind("# CASE: ", 0) == 0) {
      file.cases.push_back({line.substr(8), "", ""});
      current = &file.cases.back();
      in_check = false;
      continue;
    }
    if (!current) {
      if (line.rfind("# RUN: ", 0) == 0) file.run = line.substr(7);
      file.header += line + "\n";
      continue;
    }
    if (line == "# CHECK:") {
      in_check = true;
      continue;
    }
    (in_check ? current->expected : current->input) += line + "\n";
  }
  return file;
}

void write_golden(const std::filesystem::path& path, const GoldenFile& file) {
  std::ofstream out(path);
  out << file.header;
  for (size_t i = 0; i < file.cases.size(); ++i) {
    const Case& c = file.cases[i];
    out << "# CASE: " << c.name << "\n" << c.input << "# CHECK:\n" << c.expected;
    if (i + 1 < file.cases.size()) out << "\n";
  }
}

// Without blank lines at either end (cases are separated by one).
std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of('\n'), e = s.find_last_not_of('\n');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1) + "\n";
}

// The value of `key=` on the RUN line.
int run_arg(const std::string& run, const std::string& key) {
  size_t at = run.find(key + "=");
  return at == std::string::npos ? 0 : std::atoi(run.c_str() + at + key.size() + 1);
}

// The text the RUN line's transformation makes of `input`.
std::string transform(const std::string& run, const std::string& input) {
  auto parsed = graph::parse_graph(input);
  if (!parsed) return "error: " + parsed.error().message + "\n";
  graph::Graph& g = **parsed;
  if (auto st = graph::infer_meta_all(g); !st) return "error: " + st.error().message + "\n";
  const std::string pass = run.substr(0, run.find(' '));
  std::ostringstream out;
  if (pass == "dce") {
    out << "removed " << graph::eliminate_dead_code(g) << "\n";
  } else if (pass == "cse") {
    out << "removed " << graph::eliminate_common_subexpressions(g) << "\n";
  } else if (pass == "fold_constants") {
    auto n = graph::fold_constants(g);
    if (!n) return "error: " + n.error().message + "\n";
    out << "folded " << *n << "\n";
  } else if (pass == "decompose_for_fusion") {
    auto n = graph::decompose_for_fusion(g);
    if (!n) return "error: " + n.error().message + "\n";
    out << "decomposed " << *n << "\n";
  } else if (pass == "expose_unused_results") {
    out << "exposed " << graph::expose_unused_results(g) << "\n";
  } else if (pass == "partition") {
    int tangents = 0;
    for (const graph::Node* p : g.placeholders()) tangents += p->name().rfind("tangents", 0) == 0;
    const int primals = static_cast<int>(g.placeholders().size()) - tangents;
    auto p = graph::aot::partition_joint(g, primals, tangents, run_arg(run, "forward_outputs"));
    if (!p) return "error: " + p.error().message + "\n";
    out << "saved " << p->num_saved << " (" << p->saved_bytes << " bytes, " << p->saved_bytes_naive
        << " saving every value the backward reads), recomputed " << p->num_recomputed << "\n"
        << "forward:\n" << graph::print_graph(*p->forward) << "backward:\n" << graph::print_graph(*p->backward);
    return out.str();
  } else if (pass == "kernels") {
    std::shared_ptr<const graph::Graph> shared(std::move(*parsed));
    auto program = jit::lower(shared, jit::LoweringOptions{});
    if (!program) return "error: " + program.error().message + "\n";
    for (const jit::Step& s : program->steps) {
      if (s.kind == jit::Step::Kind::kernel) {
        out << jit::loop::print_kernel(program->kernels[static_cast<size_t>(s.kernel)]);
      } else {
        out << "extern " << s.node->name() << " = " << s.node->op()->qualified_name() << "\n";
      }
    }
    return out.str();
  } else {
    return "error: unknown RUN transformation '" + pass + "'\n";
  }
  return out.str() + graph::print_graph(g);
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kGoldenDir))
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

class GoldenText : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(GoldenText, EveryCasePrintsItsCheck) {
  const std::filesystem::path path = GetParam();
  GoldenFile file = read_golden(path);
  ASSERT_FALSE(file.run.empty()) << path << " has no '# RUN:' line";
  ASSERT_FALSE(file.cases.empty()) << path << " has no '# CASE:'";
  const char* update = std::getenv("TRACEJIT_UPDATE_GOLDEN");
  const bool rewrite = update && std::string(update) == "1";
  for (Case& c : file.cases) {
    const std::string got = transform(file.run, trimmed(c.input));
    if (rewrite) {
      c.expected = got;
      continue;
    }
    EXPECT_EQ(got, trimmed(c.expected)) << path.filename().string() << ", case " << c.name
                                        << " (TRACEJIT_UPDATE_GOLDEN=1 rewrites the CHECK sections)";
  }
  if (rewrite) write_golden(path, file);
}

INSTANTIATE_TEST_SUITE_P(Files, GoldenText, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<std::filesystem::path>& info) {
                           return info.param.stem().string();
                         });

}  // namespace
}  // namespace tj
