// gpu_check: runs on a real GPU the device programs that a CPU test wrote
// as "cases" (test_jit_nvrtc_device, GpuCases.*, into TJ_GPU_CASES_DIR),
// checks their outputs against what eager PyTorch computed, and times them
// against the device's copy bandwidth. It is built without tracejit (no
// LibTorch, no LLVM) from src/jit/cuda_device.cpp, cuda_driver.cpp (the
// driver through dlopen) and nvrtc_compile.cpp: every kernel is compiled
// again for the device's architecture. scripts/gpu-check prepares the
// cases, builds this with g++ and runs it; --markdown writes the table
// kept in docs/gpu-results.md.
//
// A case NAME is NAME.program (cuda::to_text) and NAME.case, lines of
// `key values...`: title TEXT | inputs data (NAME.in) | inputs pattern SEED
// | expected data (NAME.out) | expected sums S0 S1... | rtol X | atol Y |
// eager_cpu_ms X | traffic_bytes N | goal F (a fraction of copy bandwidth).
//
// Usage: gpu_check DIR [--markdown FILE] [--libcuda PATH] [--filter SUBSTRING] [--parse-only]
// --parse-only needs no GPU: it reads and checks every case and compiles its
// kernels for sm_90. Exit status: 0 all passed, 1 some failed, 2 bad usage, 77 no device.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/cuda_device.h"
#include "jit/cuda_driver.h"
#include "jit/nvrtc_compile.h"

namespace {

namespace cuda = tj::jit::cuda;
namespace fs = std::filesystem;
using tj::Error;
using tj::Expected;
using tj::Status;
constexpr size_t npos = std::string::npos;

struct Case {
  std::string title;
  cuda::DeviceProgram program;
  std::vector<std::string> inputs;    // per program input, its bytes
  std::vector<std::string> expected;  // per program output, its bytes
  std::vector<double> sums;           // or, per program output, the sum of its elements
  double rtol = 1e-4, atol = 1e-5, eager_cpu_ms = 0, traffic_bytes = 0, goal = 0;
};

// What a case came to, and its row of the Markdown table.
struct Outcome { bool passed = false; std::string row; };

__attribute__((format(printf, 1, 2))) std::string format(const char* f, ...) {  // short texts
  char text[1024];
  va_list args;
  va_start(args, f);
  std::vsnprintf(text, sizeof text, f, args);
  va_end(args);
  return text;
}

Expected<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path.string()};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A whole token as a number ("nan", "inf" too).
bool parse_number(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

// Whether `b` is whole elements of a dtype element() reads (element_size throws on others).
bool readable(const cuda::ProgramBuffer& b) {
  try {
    return b.bytes % cuda::element_size(b.dtype) == 0;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// `file`, the concatenation of `buffers`' bytes, cut into one string each.
Status read_buffers(const fs::path& file, const cuda::DeviceProgram& p, const std::vector<int>& buffers,
                    std::vector<std::string>& parts) {
  auto data = read_file(file);
  if (!data) return data.error();
  size_t want = 0, at = 0;
  for (int b : buffers) want += p.buffers[static_cast<size_t>(b)].bytes;
  if (data->size() != want)
    return Error{format("%s has %zu bytes, the program's buffers %zu", file.filename().c_str(), data->size(), want)};
  for (int b : buffers) {
    parts.push_back(data->substr(at, p.buffers[static_cast<size_t>(b)].bytes));
    at += parts.back().size();
  }
  return tj::ok_status();
}

// Reads and checks NAME.program, NAME.case and the data files they name.
Expected<Case> load_case(const fs::path& dir, const std::string& name) {
  Case c;
  auto text = read_file(dir / (name + ".program"));
  if (!text) return text.error();
  auto program = cuda::from_text(*text);
  if (!program) return Error{name + ".program: " + program.error().message};
  c.program = std::move(*program);
  const cuda::DeviceProgram& p = c.program;
  for (const std::vector<int>* list : {&p.inputs, &p.outputs})
    for (int b : *list)
      if (const cuda::ProgramBuffer& buffer = p.buffers[static_cast<size_t>(b)]; !readable(buffer))
        return Error{format("%s.program: buffer %d: %zu bytes of dtype '%s'", name.c_str(), b, buffer.bytes,
                            buffer.dtype.c_str())};

  auto spec = read_file(dir / (name + ".case"));
  if (!spec) return spec.error();
  const std::pair<const char*, double Case::*> numbers[] = {
      {"rtol", &Case::rtol}, {"atol", &Case::atol}, {"eager_cpu_ms", &Case::eager_cpu_ms},
      {"traffic_bytes", &Case::traffic_bytes}, {"goal", &Case::goal}};
  std::istringstream lines(*spec);
  std::string line, inputs, expected;
  uint64_t seed = 0;
  for (int n = 1; std::getline(lines, line); ++n) {
    auto bad = [&](const std::string& what) { return Error{format("%s.case:%d: ", name.c_str(), n) + what}; };
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#') continue;
    if (key == "title") {
      std::getline(words >> std::ws, c.title);
      continue;
    }
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    if (key == "inputs") {
      inputs = args.empty() ? "" : args[0];
      const bool ok = (inputs == "data" && args.size() == 1) ||
                      (inputs == "pattern" && args.size() == 2 && args[1].find_first_not_of("0123456789") == npos &&
                       (seed = std::strtoull(args[1].c_str(), nullptr, 10), true));
      if (!ok) return bad("want 'inputs data' or 'inputs pattern SEED'");
    } else if (key == "expected") {
      expected = args.empty() ? "" : args[0];
      c.sums.assign(args.size() > 1 ? args.size() - 1 : 0, 0.0);
      bool ok = (expected == "data" && args.size() == 1) || (expected == "sums" && c.sums.size() == p.outputs.size());
      for (size_t i = 0; ok && i < c.sums.size(); ++i) ok = parse_number(args[i + 1], c.sums[i]);
      if (!ok) return bad(format("want 'expected data' or 'expected sums' and %zu numbers", p.outputs.size()));
    } else {
      auto it = std::find_if(std::begin(numbers), std::end(numbers), [&](auto& e) { return key == e.first; });
      if (it == std::end(numbers)) return bad("unknown key '" + key + "'");
      double& value = c.*(it->second);
      if (args.size() != 1 || !parse_number(args[0], value) || !(value >= 0) || std::isinf(value))
        return bad("'" + key + "' wants one number >= 0");
    }
  }

  if (inputs == "data") {
    if (auto s = read_buffers(dir / (name + ".in"), p, p.inputs, c.inputs); !s) return s.error();
  } else if (inputs == "pattern") {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const cuda::ProgramBuffer& b = p.buffers[static_cast<size_t>(p.inputs[i])];
      c.inputs.emplace_back(b.bytes, '\0');
      cuda::fill_pattern(c.inputs.back().data(), b.bytes / cuda::element_size(b.dtype), b.dtype, seed + i);
    }
  } else if (!p.inputs.empty()) {
    return Error{name + ".case: no 'inputs' line"};
  }
  if (expected == "data") {
    if (auto s = read_buffers(dir / (name + ".out"), p, p.outputs, c.expected); !s) return s.error();
  } else if (expected.empty()) {
    return Error{name + ".case: no 'expected' line"};
  }
  if (c.goal > 0 && c.traffic_bytes <= 0) return Error{name + ".case: a 'goal' without 'traffic_bytes'"};
  return c;
}

// The names of DIR's cases (NAME.case) containing `filter`, sorted.
Expected<std::vector<std::string>> list_cases(const fs::path& dir, const std::string& filter) {
  std::error_code error;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".case" && it->path().stem().string().find(filter) != npos)
      names.push_back(it->path().stem().string());
  if (error) return Error{"cannot list " + dir.string() + ": " + error.message()};
  std::sort(names.begin(), names.end());
  return names;
}

bool close(double got, double want, const Case& c) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= c.atol + c.rtol * std::fabs(want);
}

// The first 3 mismatches of `outputs` (one string per program output).
std::vector<std::string> compare(const Case& c, const std::vector<std::string>& outputs) {
  std::vector<std::string> mismatches;
  for (size_t j = 0; j < outputs.size() && mismatches.size() < 3; ++j) {
    const cuda::ProgramBuffer& b = c.program.buffers[static_cast<size_t>(c.program.outputs[j])];
    const size_t n = b.bytes / cuda::element_size(b.dtype);
    if (!c.sums.empty()) {
      double sum = 0;
      for (size_t k = 0; k < n; ++k) sum += cuda::element(outputs[j].data(), k, b.dtype);
      if (!close(sum, c.sums[j], c))
        mismatches.push_back(format("output %zu sum: got %.9g, want %.9g", j, sum, c.sums[j]));
      continue;
    }
    for (size_t k = 0; k < n && mismatches.size() < 3; ++k) {
      const double got = cuda::element(outputs[j].data(), k, b.dtype);
      const double want = cuda::element(c.expected[j].data(), k, b.dtype);
      if (!close(got, want, c))
        mismatches.push_back(format("output %zu element %zu: got %.9g, want %.9g", j, k, got, want));
    }
  }
  return mismatches;
}

// Milliseconds, on the device's clock, that `repeats` runs of `work` take.
Expected<double> time_ms(cuda::DriverDevice& device, int repeats, const std::function<Status()>& work) {
  return device.time_ms([&]() -> Status {
    for (int i = 0; i < repeats; ++i)
      if (auto s = work(); !s) return s;
    return tj::ok_status();
  });
}

// Milliseconds per call: 3 warm-up calls, then the fastest of 3 batches of
// R calls, R chosen so a batch lasts about 20 ms.
Expected<double> time_per_call(cuda::DriverDevice& device, cuda::ProgramRunner& runner) {
  auto call = [&]() { return runner.launch_all(); };
  auto once = time_ms(device, 3, call);  // warm-up
  if (once) once = time_ms(device, 1, call);
  if (!once) return once.error();
  const int repeats = static_cast<int>(std::clamp(std::ceil(20.0 / std::max(*once, 1e-4)), 3.0, 2000.0));
  double best = INFINITY;
  for (int i = 0; i < 3; ++i) {
    auto ms = time_ms(device, repeats, call);
    if (!ms) return ms.error();
    best = std::min(best, *ms);
  }
  return best / repeats;
}

// GB/s of device-to-device copies, counting bytes read and written.
Expected<double> copy_bandwidth(cuda::DriverDevice& device) {
  const size_t bytes = size_t{256} << 20;
  auto a = device.alloc(bytes), b = a ? device.alloc(bytes) : a;
  auto copy = [&]() { return device.copy_device_to_device(*b, *a, bytes); };
  auto ms = b ? time_ms(device, 1, copy) : Expected<double>(b.error());  // the first: a warm-up
  if (ms) ms = time_ms(device, 10, copy);
  if (a) device.free(*a);
  if (b) device.free(*b);
  if (!ms) return ms.error();
  return 2.0 * static_cast<double>(bytes) * 10 / (*ms * 1e-3) / 1e9;
}

// A row of the Markdown table: these cells, '|' escaped, the rest empty.
std::string table_row(std::vector<std::string> cells) {
  cells.resize(10);
  std::string row;
  for (std::string& cell : cells) {
    for (size_t at = 0; (at = cell.find('|', at)) != npos; at += 2) cell.replace(at, 1, "\\|");
    row += "| " + cell + " ";
  }
  return row + "|\n";
}

// Runs, checks and times one case on `device`, printing its line(s); with
// no device, only reads the case and compiles its kernels for sm_90.
Outcome run_case(cuda::DriverDevice* device, const fs::path& dir, const std::string& name, double copy_gbps) {
  std::string title, kernels;
  auto fail = [&](const std::string& result, const std::string& why) {
    if (!why.empty()) std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    return Outcome{false, table_row({name, title, kernels, result})};
  };
  auto c = load_case(dir, name);
  if (!c) return fail("error", c.error().message);
  title = c->title;
  kernels = std::to_string(c->program.kernels.size());
  cuda::DeviceProgram program = c->program;
  for (cuda::ProgramKernel& k : program.kernels) {
    auto ptx = tj::jit::nvrtc::compile_ptx(k.source, k.name, device ? device->arch() : "sm_90");
    if (!ptx) return fail("error", ptx.error().message);
    k.ptx = std::move(*ptx);
  }
  if (!device) return Outcome{true, ""};

  cuda::DeviceAllocator allocator(*device);
  cuda::ProgramRunner runner(*device, allocator, std::move(program));
  if (auto s = runner.load(); !s) return fail("error", s.error().message);
  std::vector<cuda::HostInput> inputs;
  for (const std::string& in : c->inputs) inputs.push_back({in.data(), in.size(), 0});
  std::vector<std::string> outputs;
  std::vector<void*> output_ptrs;
  for (int b : c->program.outputs) outputs.emplace_back(c->program.buffers[static_cast<size_t>(b)].bytes, '\0');
  for (std::string& out : outputs) output_ptrs.push_back(out.data());
  if (auto s = runner.run(inputs, output_ptrs); !s) return fail("error", s.error().message);
  if (auto mismatches = compare(*c, outputs); !mismatches.empty()) {
    for (const std::string& m : mismatches) std::printf("FAIL %s: %s\n", name.c_str(), m.c_str());
    return fail("wrong output", "");
  }
  auto ms = time_per_call(*device, runner);
  if (!ms) return fail("error", "timing: " + ms.error().message);

  const double gbps = c->traffic_bytes / (*ms * 1e-3) / 1e9, of_copy = gbps / copy_gbps, x = c->eager_cpu_ms / *ms;
  const bool met = of_copy >= c->goal, eager = c->eager_cpu_ms > 0, traffic = c->traffic_bytes > 0;
  const std::string goal = c->goal > 0 ? format("%.0f%%: %s", 100 * c->goal, met ? "met" : "missed") : "";
  const std::string speedup = eager ? format("x%.*f", x >= 100 ? 0 : x >= 10 ? 1 : 2, x) : "";
  std::string line = format("%s %s  %s kernel%s  %.4g ms", met ? "PASS" : "FAIL", name.c_str(), kernels.c_str(),
                            kernels == "1" ? "" : "s", *ms);
  if (eager) line += format("  eager CPU %.3g ms  %s", c->eager_cpu_ms, speedup.c_str());
  if (traffic) line += format("  %.0f GB/s  %.0f%% of copy", gbps, 100 * of_copy);
  if (!goal.empty()) line += " (goal " + goal + ")";
  std::printf("%s\n", line.c_str());
  return Outcome{met, table_row({name, title, kernels, met ? "pass" : "goal missed", format("%.4g", *ms),
                                 eager ? format("%.3g", c->eager_cpu_ms) : "", speedup,
                                 traffic ? format("%.0f", gbps) : "", traffic ? format("%.0f%%", 100 * of_copy) : "",
                                 goal})};
}

Status write_markdown(const std::string& file, const cuda::DriverDevice& device, double copy_gbps,
                      const std::string& rows) {
  std::ofstream out(file);
  const std::time_t now = std::time(nullptr);
  out << "### " << device.name() << " (" << device.arch() << ", " << device.multiprocessors() << " SMs)\n\n"
      << format("Copy bandwidth %.0f GB/s (read + write), measured ", copy_gbps)
      << std::put_time(std::gmtime(&now), "%Y-%m-%d") << " by `scripts/gpu-check`.\n\n"
      << "| case | title | kernels | result | GPU ms | eager CPU ms | speed-up | GB/s | % of copy | goal |\n"
      << "|---|---|---:|---|---:|---:|---:|---:|---:|---|\n"
      << rows;
  if (!out.flush()) return Error{"cannot write " + file};
  return tj::ok_status();
}

int run(int argc, char** argv) {
  std::string dir, markdown, libcuda = "libcuda.so.1", filter;
  bool parse_only = false, usage = argc > 1;
  for (int i = 1; usage && i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* value = arg == "--markdown" ? &markdown : arg == "--libcuda" ? &libcuda : nullptr;
    if (arg == "--filter") value = &filter;
    if (value) usage = ++i < argc && (*value = argv[i], true);
    else if (arg == "--parse-only") parse_only = true;
    else usage = dir.empty() && !arg.empty() && arg[0] != '-' && (dir = arg, true);
  }
  if (!usage || dir.empty()) {
    std::fprintf(stderr, "usage: gpu_check DIR [--markdown FILE] [--libcuda PATH] [--filter SUBSTRING] "
                         "[--parse-only]\n");
    return 2;
  }

  std::unique_ptr<cuda::DriverDevice> device;
  Expected<double> copy_gbps = 0.0;
  if (!parse_only) {
    auto opened = cuda::open_driver_device(libcuda);
    if (!opened) return std::printf("gpu_check: no CUDA device: %s\n", opened.error().message.c_str()), 77;
    device = std::move(*opened);
    std::printf("device: %s, %s, %d SMs\n", device->name().c_str(), device->arch().c_str(), device->multiprocessors());
    copy_gbps = copy_bandwidth(*device);
    if (!copy_gbps) return std::printf("gpu_check: copy bandwidth: %s\n", copy_gbps.error().message.c_str()), 1;
    std::printf("copy bandwidth: %.0f GB/s (read + write)\n", *copy_gbps);
    std::fflush(stdout);
  }
  auto names = list_cases(dir, filter);
  if (!names) return std::printf("gpu_check: %s\n", names.error().message.c_str()), 1;
  std::string rows;
  int passed = 0, failed = 0;
  for (const std::string& name : *names) {
    const Outcome outcome = run_case(device.get(), dir, name, *copy_gbps);
    (outcome.passed ? passed : failed) += 1;
    rows += outcome.row;
    std::fflush(stdout);
  }
  Status written = markdown.empty() || !device ? tj::ok_status()
                                               : write_markdown(markdown, *device, *copy_gbps, rows);
  if (!written) std::printf("gpu_check: %s\n", written.error().message.c_str());
  if (parse_only) std::printf("%d cases parsed, %d failed\n", passed, failed);
  else std::printf("%d passed, %d failed\n", passed, failed);
  return failed || !written ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("gpu_check: %s\n", e.what());
    return 1;
  }
}
