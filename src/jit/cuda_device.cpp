// The caching device allocator, DeviceProgram's text form and the
// ProgramRunner; see cuda_device.h.
#include "jit/cuda_device.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace tj::jit::cuda {

DeviceAllocator::~DeviceAllocator() { empty_cache(); }

Expected<DevicePtr> DeviceAllocator::take(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t size = rounded(bytes);
  if (auto it = free_.find(size); it != free_.end()) {
    DevicePtr p = it->second;
    free_.erase(it);
    cached_bytes_ -= size;
    ++reused_;
    return p;
  }
  auto p = device_.alloc(size);
  if (!p && !free_.empty()) {  // out of memory: give the cache back and try once more
    empty_locked();
    p = device_.alloc(size);
  }
  if (p) ++device_allocations_;
  return p;
}

void DeviceAllocator::give_back(DevicePtr ptr, size_t bytes) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t size = rounded(bytes);
  free_.emplace(size, ptr);
  cached_bytes_ += size;
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_locked();
}

void DeviceAllocator::empty_locked() {
  for (auto& [size, ptr] : free_) device_.free(ptr);
  free_.clear();
  cached_bytes_ = 0;
}

// ---- text form -------------------------------------------------------------

namespace {

constexpr const char* kMagic = "tracejit-device-program 1";

const char* role_name(ProgramBuffer::Role r) {
  switch (r) {
    case ProgramBuffer::Role::input: return "input";
    case ProgramBuffer::Role::output: return "output";
    case ProgramBuffer::Role::temp: return "temp";
  }
  return "temp";
}

template <class T>
void write_list(std::ostream& out, const std::vector<T>& v) {
  out << v.size();
  for (const T& x : v) out << ' ' << x;
}

template <class T>
bool read_list(std::istream& in, std::vector<T>& v) {
  size_t n = 0;
  if (!(in >> n) || n > (1u << 20)) return false;
  v.resize(n);
  for (T& x : v)
    if (!(in >> x)) return false;
  return true;
}

bool read_blob(std::istream& in, size_t bytes, std::string& out) {
  out.resize(bytes);
  return static_cast<bool>(in.read(out.data(), static_cast<std::streamsize>(bytes)));
}

}  // namespace

std::string to_text(const DeviceProgram& p) {
  std::ostringstream out;
  out << kMagic << "\n";
  for (const ProgramKernel& k : p.kernels)
    out << "kernel " << k.name << ' ' << k.source.size() << ' ' << k.ptx.size() << "\n" << k.source << k.ptx << "\n";
  for (const ProgramBuffer& b : p.buffers)
    out << "buffer " << role_name(b.role) << ' ' << b.bytes << ' ' << (b.dtype.empty() ? "-" : b.dtype) << "\n";
  for (const ProgramLaunch& l : p.launches) {
    out << "launch " << l.kernel << ' ' << l.blocks << ' ' << l.threads << ' ';
    write_list(out, l.buffers);
    out << ' ';
    write_list(out, l.sizes);
    out << ' ';
    write_list(out, l.strides);
    out << "\n";
  }
  out << "inputs ";
  write_list(out, p.inputs);
  out << "\noutputs ";
  write_list(out, p.outputs);
  out << "\n";
  return out.str();
}

Expected<DeviceProgram> from_text(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return Error{"not a tracejit device program (no '" + std::string(kMagic) + "' line)"};
  DeviceProgram p;
  std::string word;
  auto bad = [&](const std::string& what) { return Error{"malformed device program: " + what}; };
  while (in >> word) {
    if (word == "kernel") {
      ProgramKernel k;
      size_t source = 0, ptx = 0;
      if (!(in >> k.name >> source >> ptx) || in.get() != '\n' || !read_blob(in, source, k.source) ||
          !read_blob(in, ptx, k.ptx))
        return bad("kernel " + k.name);
      p.kernels.push_back(std::move(k));
    } else if (word == "buffer") {
      ProgramBuffer b;
      std::string role;
      if (!(in >> role >> b.bytes >> b.dtype)) return bad("buffer");
      if (b.dtype == "-") b.dtype.clear();
      if (role == "input") b.role = ProgramBuffer::Role::input;
      else if (role == "output") b.role = ProgramBuffer::Role::output;
      else if (role == "temp") b.role = ProgramBuffer::Role::temp;
      else return bad("buffer role " + role);
      p.buffers.push_back(std::move(b));
    } else if (word == "launch") {
      ProgramLaunch l;
      if (!(in >> l.kernel >> l.blocks >> l.threads) || !read_list(in, l.buffers) || !read_list(in, l.sizes) ||
          !read_list(in, l.strides))
        return bad("launch");
      p.launches.push_back(std::move(l));
    } else if (word == "inputs") {
      if (!read_list(in, p.inputs)) return bad("inputs");
    } else if (word == "outputs") {
      if (!read_list(in, p.outputs)) return bad("outputs");
    } else {
      return bad("unknown line '" + word + "'");
    }
  }
  const int nk = static_cast<int>(p.kernels.size()), nb = static_cast<int>(p.buffers.size());
  for (const ProgramLaunch& l : p.launches) {
    if (l.kernel < 0 || l.kernel >= nk) return bad("launch of kernel " + std::to_string(l.kernel));
    if (l.strides.size() != l.buffers.size() * l.sizes.size()) return bad("launch strides");
    if (l.threads <= 0 || l.threads > 1024 || l.blocks <= 0) return bad("launch shape");
    for (int b : l.buffers)
      if (b < 0 || b >= nb) return bad("launch buffer " + std::to_string(b));
  }
  for (const std::vector<int>* list : {&p.inputs, &p.outputs})
    for (int b : *list)
      if (b < 0 || b >= nb) return bad("program buffer " + std::to_string(b));
  return p;
}

// ---- runner ------------------------------------------------------------------

ProgramRunner::~ProgramRunner() {
  for (size_t b = 0; b < buffers_.size(); ++b) allocator_.give_back(buffers_[b], program_.buffers[b].bytes);
  allocator_.give_back(args_, args_bytes_);
}

Status ProgramRunner::load() {
  handles_.clear();
  for (const ProgramKernel& k : program_.kernels) {
    auto h = device_.load(k.name, k.source, k.ptx);
    if (!h) return h.error();
    handles_.push_back(*h);
  }
  return ok_status();
}

// Buffers and the launches' argument arrays, once: after this, a call copies
// only its inputs and outputs.
Status ProgramRunner::prepare() {
  if (!buffers_.empty() || program_.buffers.empty()) return ok_status();
  std::vector<DevicePtr> buffers;
  for (const ProgramBuffer& b : program_.buffers) {
    auto p = allocator_.take(b.bytes);
    if (!p) {
      for (size_t i = 0; i < buffers.size(); ++i) allocator_.give_back(buffers[i], program_.buffers[i].bytes);
      return p.error();
    }
    buffers.push_back(*p);
  }
  buffers_ = std::move(buffers);
  input_keys_.assign(program_.inputs.size(), 0);
  // one block of 8-byte words: per launch its pointers, sizes and strides
  std::vector<uint64_t> words;
  for (const ProgramLaunch& l : program_.launches) {
    arg_offsets_.push_back(words.size() * 8);
    for (int b : l.buffers) words.push_back(buffers_[static_cast<size_t>(b)]);
    for (int64_t s : l.sizes) words.push_back(static_cast<uint64_t>(s));
    for (int64_t s : l.strides) words.push_back(static_cast<uint64_t>(s));
  }
  args_bytes_ = words.size() * 8;
  if (args_bytes_ == 0) return ok_status();
  auto args = allocator_.take(args_bytes_);
  if (!args) return args.error();
  args_ = *args;
  return device_.copy_to_device(args_, words.data(), args_bytes_);
}

Status ProgramRunner::launch_all() {
  if (handles_.size() != program_.kernels.size()) return Error{"the program's kernels are not loaded"};
  for (size_t i = 0; i < program_.launches.size(); ++i) {
    const ProgramLaunch& l = program_.launches[i];
    const DevicePtr ptrs = args_ + arg_offsets_[i];
    const DevicePtr sizes = ptrs + l.buffers.size() * 8;
    const DevicePtr strides = sizes + l.sizes.size() * 8;
    auto s = device_.launch(handles_[static_cast<size_t>(l.kernel)], l.blocks, l.threads, ptrs, sizes, strides);
    if (!s) return Error{"kernel " + program_.kernels[static_cast<size_t>(l.kernel)].name + ": " + s.error().message};
  }
  return ok_status();
}

Status ProgramRunner::run(const std::vector<HostInput>& inputs, const std::vector<void*>& outputs) {
  if (inputs.size() != program_.inputs.size() || outputs.size() != program_.outputs.size())
    return Error{"device program called with " + std::to_string(inputs.size()) + " inputs and " +
                 std::to_string(outputs.size()) + " outputs, made for " + std::to_string(program_.inputs.size()) +
                 " and " + std::to_string(program_.outputs.size())};
  if (auto s = prepare(); !s) return s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t b = static_cast<size_t>(program_.inputs[i]);
    const HostInput& in = inputs[i];
    if (in.bytes != program_.buffers[b].bytes)
      return Error{"device program input " + std::to_string(i) + " has " + std::to_string(in.bytes) +
                   " bytes, made for " + std::to_string(program_.buffers[b].bytes)};
    if (in.key != 0 && in.key == input_keys_[i]) {
      ++uploads_skipped_;
      continue;
    }
    input_keys_[i] = 0;  // unknown until the copy succeeds
    if (in.bytes) {
      if (auto s = device_.copy_to_device(buffers_[b], in.data, in.bytes); !s) return s;
    }
    input_keys_[i] = in.key;
    ++uploads_;
  }
  if (auto s = launch_all(); !s) return s;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const size_t b = static_cast<size_t>(program_.outputs[o]);
    if (!program_.buffers[b].bytes) continue;
    if (auto s = device_.copy_to_host(outputs[o], buffers_[b], program_.buffers[b].bytes); !s) return s;
  }
  return device_.synchronize();
}

// ---- host data -----------------------------------------------------------------

namespace {

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0    ? std::ldexp(mantissa, -24)
             : exponent == 31 ? (mantissa ? NAN : INFINITY)
                              : std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -v : v;
}

// `v` exactly representable as a normal float16 (or zero).
uint16_t exact_half(double v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  return static_cast<uint16_t>(sign | ((e + 14) << 10) | (static_cast<int>(std::ldexp(m, 11)) & 1023));
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

}  // namespace

size_t element_size(const std::string& dtype) {
  if (dtype == "Double" || dtype == "Long") return 8;
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "Short") return 2;
  if (dtype == "Bool" || dtype == "Byte" || dtype == "Char") return 1;
  throw std::invalid_argument("no element size for dtype " + dtype);
}

double element(const void* data, size_t i, const std::string& dtype) {
  const char* p = static_cast<const char*>(data) + i * element_size(dtype);
  auto read = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  if (dtype == "Double") return read(0.0);
  if (dtype == "Float") return read(0.0f);
  if (dtype == "Long") return static_cast<double>(read(int64_t{0}));
  if (dtype == "Int") return read(int32_t{0});
  if (dtype == "Short") return read(int16_t{0});
  if (dtype == "Half") return half_to_double(read(uint16_t{0}));
  if (dtype == "BFloat16") return bits_to_float(static_cast<uint32_t>(read(uint16_t{0})) << 16);
  if (dtype == "Char") return read(int8_t{0});
  return read(uint8_t{0});  // Bool, Byte
}

void fill_pattern(void* data, size_t count, const std::string& dtype, uint64_t seed) {
  char* out = static_cast<char*>(data);
  const size_t size = element_size(dtype);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(i * 0x9e3779b97f4a7c15ULL + seed);
    const double v = static_cast<double>(static_cast<int64_t>(h % 64) - 32) / 8;  // [-4, 4) in steps of 1/8
    char* p = out + i * size;
    if (dtype == "Double") {
      std::memcpy(p, &v, 8);
    } else if (dtype == "Float") {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (dtype == "Half") {
      const uint16_t b = exact_half(v);
      std::memcpy(p, &b, 2);
    } else if (dtype == "BFloat16") {
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      const uint16_t b = static_cast<uint16_t>(bits >> 16);  // exact: few mantissa bits
      std::memcpy(p, &b, 2);
    } else if (dtype == "Bool") {
      *p = static_cast<char>(h & 1);
    } else {
      const int64_t x = static_cast<int64_t>(h % 201) - 100;
      std::memcpy(p, &x, size);  // little-endian: the low bytes
    }
  }
}

}  // namespace tj::jit::cuda
