// The llvm backend's compile step and executor; see llvm_backend.h.
//
// The executor runs a precomputed list of steps over a vector of value
// slots: an extern step calls its ATen op through the boxed dispatcher (as
// aot_eager does), a kernel step allocates its outputs with the strides of
// the nodes' fake TensorMetas (eager's), fills a pointer array and calls the
// machine code: the flat variant when every input is, at run time, laid out
// as compiled (loop::Layout), the strided variant otherwise, each buffer's
// strides taken through the step's dim maps (broadcast dims get stride 0). Slots are released
// after their last use. Inputs whose sizes or dtypes differ from what the
// graph was compiled for, or an input a kernel writes in place that is not
// one dense block, run the graph op by op instead (never wrong); a kernel
// whose input (an extern op's result) differs at run time from its node's
// meta runs its nodes op by op (a wrong meta kernel never makes it read
// out of bounds).
#include "jit/llvm_backend.h"

#include <algorithm>
#include <limits>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <stdexcept>
#include <string>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/util/SmallVector.h>
#include <c10/util/StringUtil.h>

#include "graph/boxing.h"
#include "graph/interpreter.h"
#include "graph/op_registry.h"
#include "graph/passes/freeze.h"
#include "jit/frozen_constants.h"
#include "jit/kernel_buffers.h"
#include "jit/kernel_cache.h"
#include "jit/llvm_codegen.h"
#include "jit/lowering.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_layout.h"
#include "jit/program_template.h"
#include "graph/sym_ints.h"
#include "support/log.h"

namespace tj::jit {

namespace {

std::mutex g_inject_mutex;
std::string g_inject_bug;
LlvmCompileStats g_last_stats;

std::atomic<long long> g_outputs_written_in_place{0};
std::atomic<long long> g_outputs_written_back_early{0};
std::atomic<long long> g_inplace_dense_fallbacks{0};
std::atomic<long long> g_inputs_differ_fallbacks{0};
std::atomic<long long> g_kernel_input_fallbacks{0};

// What executables of one pool group share: the kernels' IR (without sizes,
// which kernels take as arguments; `kernels` are the program's, compiled,
// which carry the hash of it) and the extern steps' ops, in order.
std::string program_structure(const Program& p, const std::vector<CompiledKernel>& kernels) {
  std::string text;
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::kernel) {
      const std::string& hash = kernels[s.kernel].key_hash;  // "" from a test's own KernelCompiler
      text += "kernel " + (hash.empty() ? loop::print_kernel(p.kernels[s.kernel], /*with_name=*/false) : hash + "\n");
    } else {
      text += "extern " + (s.node->op() ? s.node->op()->qualified_name() : s.node->target()) + "\n";
    }
  }
  return kernel_cache::hash_hex(text);
}

// A size-generic executable's ints for one size signature of its inputs
// (program_template.h), and the buffers of that size.
struct SizedProgram {
  std::vector<int64_t> signature;  // each input's dtype and rank, then its sizes
  bool served = false;             // the template serves these sizes (and dtypes)
  ProgramSizes sizes;
  GroupPool buffers;
};

struct Executable {
  Program program;
  std::vector<CompiledKernel> kernels;
  std::vector<graph::TensorMeta> input_metas;
  // The graph inputs some kernel writes in place (Step::donated), each once,
  // and how many kernel outputs go into them: gathered while compiling, so
  // a call checks the density of these inputs only.
  std::vector<int> donated_inputs;
  long long donated_outputs = 0;
  long long written_back_early = 0;  // values copied into their inputs mid-graph (Step::write_back)
  GroupPool buffers;
  // Size-generic (program_template.h): `program` is the template's, and
  // `current` its ints for the size signature of the last call.
  std::shared_ptr<const ProgramTemplate> size_template;
  mutable std::mutex current_mutex;
  mutable std::shared_ptr<const SizedProgram> current;

  std::shared_ptr<const SizedProgram> sized_for(c10::ArrayRef<at::Tensor> inputs) const;
};

std::vector<int64_t> size_signature(c10::ArrayRef<at::Tensor> inputs) {
  std::vector<int64_t> out;
  for (const at::Tensor& t : inputs) {
    out.push_back(t.defined() ? static_cast<int64_t>(t.scalar_type()) : -1);
    out.push_back(t.defined() ? t.dim() : -1);
    if (t.defined())
      for (int64_t s : t.sizes()) out.push_back(s);
  }
  return out;
}

// The internal kernel outputs a pool keeps buffers for.
void want_internal_buffers(BufferPool& pool, const std::vector<Step>& steps,
                           const std::vector<std::vector<graph::TensorMeta>>* metas) {
  for (size_t i = 0; i < steps.size(); ++i)
    for (size_t o = 0; o < steps[i].internal.size(); ++o)
      if (steps[i].internal[o]) pool.want(metas ? (*metas)[i][o] : steps[i].output_metas[o]);
}

std::shared_ptr<const SizedProgram> Executable::sized_for(c10::ArrayRef<at::Tensor> inputs) const {
  std::vector<int64_t> signature = size_signature(inputs);
  {
    std::lock_guard<std::mutex> lock(current_mutex);
    if (current && current->signature == signature) return current;
  }
  auto sized = std::make_shared<SizedProgram>();
  sized->signature = std::move(signature);
  std::vector<graph::TensorMeta> metas;
  bool same_dtypes = inputs.size() == input_metas.size();
  for (size_t i = 0; same_dtypes && i < inputs.size(); ++i) {
    same_dtypes = inputs[i].defined() && inputs[i].scalar_type() == input_metas[i].dtype && inputs[i].device().is_cpu();
    if (same_dtypes) metas.push_back(graph::TensorMeta::of(inputs[i]));
  }
  sized->served = same_dtypes && graph::aot::template_mismatch(size_template->sizes, metas).empty();
  if (sized->served) {
    sized->sizes = program_sizes(*size_template, metas);
    want_internal_buffers(sized->buffers.pool, program.steps, &sized->sizes.output_metas);
    sized->buffers.group = buffers.group;
  }
  std::lock_guard<std::mutex> lock(current_mutex);
  current = sized;
  return sized;
}

bool matches(const at::Tensor& t, const graph::TensorMeta& m) {
  return t.defined() && t.scalar_type() == m.dtype && t.sizes() == c10::IntArrayRef(m.sizes) && t.device().is_cpu();
}

// One call node (an ATen op through the boxed dispatcher, as aot_eager
// runs it, under its grad-mode tag; or a getitem), its arguments read
// through `value_of`.
c10::IValue call_node(const graph::Node& node, const graph::detail::ValueOf& value_of) {
  if (node.op()->is_getitem) {
    auto v = graph::detail::run_getitem(node, value_of);
    if (!v) throw std::runtime_error(v.error().message);
    return std::move(*v);
  }
  auto stack = graph::detail::box_arguments(node, value_of);
  if (!stack) throw std::runtime_error(stack.error().message);
  if (auto mode = node.meta().tags.grad_enabled) {
    c10::AutoGradMode grad_mode(*mode);
    node.op()->handle().callBoxed(*stack);
  } else {
    node.op()->handle().callBoxed(*stack);
  }
  return graph::detail::unbox_returns(node, *stack);
}

// Whether kernel input `t`, read through `map` (kernel dim -> tensor dim),
// lies as the kernel was compiled for: the kernel's sizes along the dims
// it reads, size 1 along the others (else the kernel would read past the
// tensor, or broadcast what eager does not).
// (Checked on every call: a bit mask, no allocation; a tensor of more than
// 64 dims is not taken as compiled.)
bool lies_as_compiled(const at::Tensor& t, const std::vector<int>& map, const std::vector<int64_t>& sizes) {
  if (t.dim() > 64) return false;
  uint64_t read = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (map[d] < 0) continue;
    if (map[d] >= t.dim() || t.size(map[d]) != sizes[d]) return false;
    read |= uint64_t{1} << map[d];
  }
  for (int64_t i = 0; i < t.dim(); ++i)
    if (!(read >> i & 1) && t.size(i) != 1) return false;
  return true;
}

// A kernel step whose inputs do not lie as compiled: its nodes run op by
// op (eager's results, in eager's layouts), and the values it stores go to
// its slots (into the donated graph input, for one written in place).
void run_members(const Executable& exe, const Step& s, std::vector<c10::IValue>& slots,
                 c10::ArrayRef<at::Tensor> graph_inputs) {
  ++g_kernel_input_fallbacks;
  const Program& p = exe.program;
  TJ_LOG(perf, "llvm backend: an input of kernel {} differs from its compiled size or dtype; its {} node(s) run op by op",
         p.kernels[s.kernel].name, s.members.size());
  std::unordered_map<const graph::Node*, c10::IValue> local;
  graph::detail::ValueOf value_of = [&](const graph::Node* n) -> const c10::IValue& {
    auto it = local.find(n);
    return it != local.end() ? it->second : slots[p.slot_of.at(n)];
  };
  for (const graph::Node* n : s.members) local[n] = call_node(*n, value_of);
  for (const graph::Node* n : s.members) {
    auto slot = p.slot_of.find(n);
    if (slot == p.slot_of.end()) continue;
    const auto o = std::find(s.outputs.begin(), s.outputs.end(), slot->second) - s.outputs.begin();
    if (o == static_cast<long>(s.outputs.size())) continue;
    c10::IValue value = std::move(local[n]);
    if (!s.donated.empty() && s.donated[o] >= 0) {
      graph_inputs[s.donated[o]].copy_(value.toTensor());
      value = graph_inputs[s.donated[o]];
    }
    slots[slot->second] = std::move(value);
  }
}

// Elements per thread's share of a kernel that computes costly functions.
constexpr int64_t kParallelGrain = 1 << 15;

// Whether a call may take the kernel's flat entry: every buffer lies as compiled (contiguous where its layout is
// full), or, a pointwise kernel, every buffer that is not a scalar has the first output's strides and those are
// dense (a channels-last output of channels-last operands, onednn_layout.h): element i of each is then at the
// same place, whatever order the places are in.
bool flat_ok(const loop::Kernel& k, c10::ArrayRef<const at::Tensor*> tensors) {
  const size_t num_out = k.outputs.size();
  bool contiguous = true, same = k.reduced_dims == 0 && tensors[0]->is_non_overlapping_and_dense();
  for (size_t b = 0; b < tensors.size(); ++b) {
    const loop::Layout l = b < num_out ? k.outputs[b].layout : k.inputs[b - num_out].layout;
    if (l == loop::Layout::other) return false;
    if (l == loop::Layout::scalar) continue;
    contiguous = contiguous && tensors[b]->is_contiguous();
    same = same && tensors[b]->strides() == tensors[0]->strides();
  }
  return contiguous || same;
}

// A pointwise kernel computes each element from the operands' elements at the same place, in any order: its
// loops run in the order of its first output's strides (largest outside), so that a channels-last output
// (onednn_layout.h) is written along its contiguous dim. `strides`: per buffer, one per dim.
void follow_first_output(c10::SmallVector<int64_t, 8>& dims, c10::SmallVector<int64_t, 64>& strides, size_t nb) {
  const size_t rank = dims.size();
  if (rank < 2) return;
  c10::SmallVector<size_t, 8> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  // size-1 dims outside (an inner loop of one element would not vectorize)
  auto key = [&](size_t d) { return dims[d] == 1 ? std::numeric_limits<int64_t>::max() : strides[d]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
  bool moved = false;
  for (size_t d = 0; d < rank; ++d) moved = moved || order[d] != d;
  if (!moved) return;
  const c10::SmallVector<int64_t, 8> old_dims(dims);
  const c10::SmallVector<int64_t, 64> old_strides(strides);
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = old_dims[order[d]];
    for (size_t b = 0; b < nb; ++b) strides[b * rank + d] = old_strides[b * rank + order[d]];
  }
}

// `sizes`: the kernel's iteration space; `metas`: its outputs' buffers (a
// size-generic program's, for this call's sizes).
void run_kernel(const Executable& exe, const Step& s, std::vector<c10::IValue>& slots,
                c10::ArrayRef<at::Tensor> graph_inputs, const std::vector<int64_t>& sizes,
                const std::vector<graph::TensorMeta>& metas, BufferPool& pool) {
  const loop::Kernel& k = exe.program.kernels[s.kernel];
  const CompiledKernel& ck = exe.kernels[s.kernel];
  RECORD_FUNCTION("tj::kernel " + k.name, c10::ArrayRef<const c10::IValue>{});
  if (s.fail_at_run_time)
    throw std::runtime_error("debug_inject_bug=relu_runtime_error: the kernel " + k.name + " failed on purpose");
  const size_t num_out = s.outputs.size();
  const size_t nb = num_out + s.inputs.size();
  c10::SmallVector<char*, 16> ptrs(nb);
  c10::SmallVector<const at::Tensor*, 16> tensors(nb);
  const size_t rank = sizes.size();
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const at::Tensor& t = slots[s.inputs[i]].toTensor();
    if (t.scalar_type() != k.inputs[i].dtype || !lies_as_compiled(t, s.dim_maps[num_out + i], sizes))
      return run_members(exe, s, slots, graph_inputs);
  }
  const size_t outer_rank = rank - static_cast<size_t>(k.reduced_dims);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < rank; ++d) (d < outer_rank ? rows : cols) *= sizes[d];
  for (size_t o = 0; o < num_out; ++o) {
    const graph::TensorMeta& m = metas[o];
    at::Tensor t = !s.donated.empty() && s.donated[o] >= 0 ? graph_inputs[s.donated[o]]
                   : s.internal[o] ? pool.take(m)
                                   : at::empty_strided(m.sizes, m.strides, at::TensorOptions().dtype(m.dtype));
    ptrs[o] = static_cast<char*>(t.data_ptr());
    slots[s.outputs[o]] = std::move(t);
    tensors[o] = &slots[s.outputs[o]].toTensor();
  }
  if (rows == 0) return;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const at::Tensor& t = slots[s.inputs[i]].toTensor();
    ptrs[num_out + i] = static_cast<char*>(t.data_ptr());
    tensors[num_out + i] = &t;
  }
  const bool flat = ck.flat != nullptr && flat_ok(k, tensors);
  // rows [begin, end) of the outer loop on each thread (one chunk when serial)
  const int64_t grain = s.parallel ? std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(cols, 1)) : rows;
  if (flat) {
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      c10::SmallVector<char*, 16> chunk(nb);
      for (size_t b = 0; b < nb; ++b) {
        loop::Layout l = b < num_out ? k.outputs[b].layout : k.inputs[b - num_out].layout;
        int64_t first = l == loop::Layout::full ? begin * cols : l == loop::Layout::row ? begin : 0;
        chunk[b] = ptrs[b] + first * tensors[b]->element_size();
      }
      ck.flat(chunk.data(), end - begin, cols);
    });
    return;
  }
  c10::SmallVector<int64_t, 64> strides(nb * rank);
  c10::SmallVector<int64_t, 8> dims(sizes.begin(), sizes.end());
  for (size_t b = 0; b < nb; ++b) {
    const std::vector<int>& map = s.dim_maps[b];
    for (size_t d = 0; d < rank; ++d) strides[b * rank + d] = map[d] < 0 ? 0 : tensors[b]->stride(map[d]);
  }
  if (k.reduced_dims == 0) follow_first_output(dims, strides, nb);
  auto strided = ck.strided_entry();
  if (!strided) throw std::runtime_error("llvm backend: " + k.name + ": " + strided.error().message);
  if (outer_rank == 0 || !s.parallel) {
    (*strided)(ptrs.data(), dims.data(), strides.data());
    return;
  }
  // split the outermost dim
  int64_t inner = rows / dims[0];
  at::parallel_for(0, dims[0], std::max<int64_t>(1, grain / std::max<int64_t>(inner, 1)),
                   [&](int64_t begin, int64_t end) {
                     c10::SmallVector<char*, 16> chunk(nb);
                     for (size_t b = 0; b < nb; ++b)
                       chunk[b] = ptrs[b] + begin * strides[b * rank] * tensors[b]->element_size();
                     c10::SmallVector<int64_t, 8> part(dims);
                     part[0] = end - begin;
                     (*strided)(chunk.data(), part.data(), strides.data());
                   });
}

// A oneDNN step (onednn_exec.h); where oneDNN does not take the case, its
// nodes run as ATen ops, the value given eager's strides.
void run_onednn(const Step& s, std::vector<c10::IValue>& slots, const graph::detail::ValueOf& value_of) {
  std::vector<const at::Tensor*> reads;
  for (int slot : s.inputs) reads.push_back(slot < 0 ? nullptr : &slots[slot].toTensor());
  const graph::Node* last = s.members.back();
  const graph::TensorMeta& meta = *last->meta().tensor();
  std::string why;
  RECORD_FUNCTION(s.onednn->op == onednn::Plan::Op::conv     ? "tj::onednn conv step"
                  : s.onednn->op == onednn::Plan::Op::linear ? "tj::onednn linear step"
                  : s.onednn->op == onednn::Plan::Op::pool   ? "tj::onednn pool step"
                                                             : "tj::onednn matmul step",
                  c10::ArrayRef<const c10::IValue>{});
  if (auto out = onednn::run(*s.onednn, reads, meta, &why)) {
    slots[s.slot] = std::move(*out);
    return;
  }
  TJ_LOG(perf, "llvm backend: oneDNN does not take {} ({}: {}); its {} node(s) run as ATen ops", s.node->name(),
         s.onednn->describe(), why, s.members.size());
  std::unordered_map<const graph::Node*, c10::IValue> local;
  graph::detail::ValueOf inner = [&](const graph::Node* n) -> const c10::IValue& {
    auto it = local.find(n);
    return it != local.end() ? it->second : value_of(n);
  };
  for (const graph::Node* n : s.members) local[n] = call_node(*n, inner);
  c10::IValue value = std::move(local[last]);
  // a channels-last input (another step's) gives a channels-last result: eager's strides for its readers
  if (!s.onednn->keep_channels_last && value.isTensor() && value.toTensor().sizes() == c10::IntArrayRef(meta.sizes) &&
      value.toTensor().strides() != c10::IntArrayRef(meta.strides)) {
    at::Tensor relaid = at::empty_strided(meta.sizes, meta.strides, value.toTensor().options());
    relaid.copy_(value.toTensor());
    value = relaid;
  }
  slots[s.slot] = std::move(value);
}

void run_extern(const Executable& exe, const Step& s, std::vector<c10::IValue>& slots,
                const graph::detail::ValueOf& value_of) {
  const graph::Node& node = *s.node;
  if (graph::is_sym(node)) {  // a size-generic program's size node
    auto v = graph::eval_sym(
        node, [&](const graph::Node& t, int64_t d) -> std::optional<int64_t> { return value_of(&t).toTensor().size(d); },
        [&](const graph::Node& n) -> std::optional<int64_t> { return value_of(&n).toInt(); });
    if (!v) throw std::runtime_error(v.error().message);
    slots[s.slot] = *v;
    return;
  }
  if (node.kind() == graph::NodeKind::get_attr) {
    const at::Tensor* t = exe.program.graph->attr(node.target());
    if (!t) throw std::runtime_error(node.name() + ": no attribute '" + node.target() + "'");
    slots[s.slot] = *t;
    return;
  }
  if (s.onednn) {
    run_onednn(s, slots, value_of);
    return;
  }
  if (s.cat != Step::Cat::aten) {  // a cat of channels-last values (onednn_layout.h)
    std::vector<at::Tensor> parts;
    for (const graph::Arg& item : node.args()[0].items()) parts.push_back(value_of(item.node()).toTensor());
    slots[s.slot] = onednn::run_cat(parts, s.cat == Step::Cat::channels_last, s.cat_capacity, *node.meta().tensor());
    return;
  }
  if (s.tconv != tconv::Form::none) {
    if (auto v = tconv::run(s.tconv, node, value_of)) {
      slots[s.slot] = std::move(*v);
      return;
    }
  }
  slots[s.slot] = call_node(node, value_of);
}

// Step::write_back: each value copied into its graph input, as AOT's wrapper
// would at the end (no version bump: the wrapper bumps once), and the input
// then stands for it, so that the value's own buffer goes now.
void write_back(const Step& s, std::vector<c10::IValue>& slots, c10::ArrayRef<at::Tensor> graph_inputs) {
  if (s.write_back.empty()) return;
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  for (const auto& [slot, position] : s.write_back) {
    const at::Tensor& input = graph_inputs[static_cast<size_t>(position)];
    input.copy_(slots[slot].toTensor());
    slots[slot] = input;
  }
}

std::vector<at::Tensor> run(const Executable& exe, c10::ArrayRef<at::Tensor> inputs) {
  const Program& p = exe.program;
  std::shared_ptr<const SizedProgram> sized = exe.size_template ? exe.sized_for(inputs) : nullptr;
  bool as_compiled = sized ? sized->served : inputs.size() == exe.input_metas.size();
  for (size_t i = 0; !sized && as_compiled && i < inputs.size(); ++i) as_compiled = matches(inputs[i], exe.input_metas[i]);
  if (sized && !as_compiled)  // its callers check `mismatch` first: the template graph's ints would not hold
    throw std::runtime_error("tracejit internal error: a program for every size called with sizes it does not serve");
  if (!as_compiled) {
    note_inputs_differ_fallback();
    TJ_LOG(perf, "llvm backend: inputs differ from the compiled ones; running the graph op by op");
    return graph::interpret_or_throw(*p.graph, inputs);
  }
  // an input updated in place must be one block of memory, as compiled for
  for (int d : exe.donated_inputs) {
    if (inputs[d].is_non_overlapping_and_dense()) continue;
    ++g_inplace_dense_fallbacks;
    TJ_LOG(perf, "llvm backend: input {} is written in place but is not dense (strides {}); running the graph op by op",
           d, c10::str(inputs[d].strides()));
    return graph::interpret_or_throw(*p.graph, inputs);
  }
  if (exe.donated_outputs) g_outputs_written_in_place += exe.donated_outputs;
  if (exe.written_back_early) g_outputs_written_back_early += exe.written_back_early;
  const GroupPool& buffers = sized ? sized->buffers : exe.buffers;
  buffers.hold();
  std::vector<c10::IValue> slots(p.num_slots);
  for (size_t i = 0; i < inputs.size(); ++i) slots[p.input_slots[i]] = inputs[i];
  graph::detail::ValueOf value_of = [&](const graph::Node* n) -> const c10::IValue& {
    return slots[p.slot_of.at(n)];
  };
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::kernel) {
      const size_t i = static_cast<size_t>(&s - p.steps.data());
      run_kernel(exe, s, slots, inputs, sized ? sized->sizes.kernel_sizes[s.kernel] : p.kernels[s.kernel].sizes,
                 sized ? sized->sizes.output_metas[i] : s.output_metas, buffers.pool);
    } else {
      run_extern(exe, s, slots, value_of);
    }
    write_back(s, slots, inputs);
    for (int r : s.release) {
      buffers.pool.offer(slots[r]);
      slots[r] = c10::IValue();
    }
  }
  const graph::Node* out = p.graph->output_node();
  if (!out) return {};
  auto value = graph::detail::arg_to_ivalue(out->args().at(0), value_of);
  if (!value) throw std::runtime_error(value.error().message);
  return graph::flatten_tensors(*value);
}

}  // namespace

void set_debug_inject_bug(std::string value) {
  std::lock_guard<std::mutex> lock(g_inject_mutex);
  g_inject_bug = std::move(value);
}

std::string debug_inject_bug() {
  std::lock_guard<std::mutex> lock(g_inject_mutex);
  return g_inject_bug;
}

long long kernel_outputs_written_in_place() { return g_outputs_written_in_place.load(); }
long long outputs_written_back_early() { return g_outputs_written_back_early.load(); }
long long inplace_dense_fallbacks() { return g_inplace_dense_fallbacks.load(); }
long long inputs_differ_fallbacks() { return g_inputs_differ_fallbacks.load(); }
long long kernel_input_fallbacks() { return g_kernel_input_fallbacks.load(); }
void note_inputs_differ_fallback() { ++g_inputs_differ_fallbacks; }

void zero_llvm_run_counters() {
  g_outputs_written_in_place = 0;
  g_outputs_written_back_early = 0;
  g_inplace_dense_fallbacks = 0;
  g_inputs_differ_fallbacks = 0;
  g_kernel_input_fallbacks = 0;
}

LlvmCompileStats last_llvm_compile_stats() {
  std::lock_guard<std::mutex> lock(g_inject_mutex);
  return g_last_stats;
}

Expected<CompiledFn> compile_llvm(std::shared_ptr<const graph::Graph> graph,
                                  const std::vector<graph::TensorMeta>& inputs) {
  return compile_llvm(std::move(graph), inputs, compile_kernel);
}

Expected<CompiledFn> compile_llvm(std::shared_ptr<const graph::Graph> graph,
                                  const std::vector<graph::TensorMeta>& inputs,
                                  const KernelCompiler& compile_one) {
  // an inference graph's parameters and buffers frozen (frozen_constants.h)
  std::optional<graph::Frozen> frozen;
  if (freezing() && debug_inject_bug().empty() && graph::is_inference_graph(*graph)) frozen = graph::freeze(*graph);
  if (frozen) {
    std::vector<graph::TensorMeta> all = inputs;
    const std::vector<graph::Node*> phs = frozen->main->placeholders();
    for (size_t i = inputs.size(); i < phs.size(); ++i) all.push_back(*phs[i]->meta().tensor());
    auto program = lower(frozen->main, lowering_options(LoweringTarget::host, *frozen->main));
    if (!program) return program.error();
    auto main = compile_llvm(std::move(*program), all, compile_one);
    if (!main) return main.error();
    note_frozen_graph(frozen->batch_norms_folded);
    return with_frozen_constants(std::move(*main), frozen->constants, frozen->frozen_inputs, graph);
  }
  auto program = lower(graph, lowering_options(LoweringTarget::host, *graph));
  if (!program) return program.error();
  return compile_llvm(std::move(*program), inputs, compile_one);
}

namespace {

Expected<CompiledFn> make_executable(Program program, const std::vector<graph::TensorMeta>& inputs,
                                     const KernelCompiler& compile_one,
                                     std::shared_ptr<const ProgramTemplate> size_template) {
  auto exe = std::make_shared<Executable>();
  exe->input_metas = inputs;
  exe->program = std::move(program);
  exe->size_template = std::move(size_template);
  if (!exe->size_template) want_internal_buffers(exe->buffers.pool, exe->program.steps, nullptr);
  for (const Step& s : exe->program.steps) {
    exe->written_back_early += static_cast<long long>(s.write_back.size());
    for (int d : s.donated) {
      if (d < 0) continue;
      ++exe->donated_outputs;
      if (std::find(exe->donated_inputs.begin(), exe->donated_inputs.end(), d) == exe->donated_inputs.end())
        exe->donated_inputs.push_back(d);
    }
  }
  for (const loop::Kernel& k : exe->program.kernels) {
    auto compiled = compile_one(k);
    if (!compiled) return compiled.error();
    exe->kernels.push_back(*compiled);
  }
  exe->buffers.group = pool_group(program_structure(exe->program, exe->kernels));
  LlvmCompileStats stats;
  stats.kernels = static_cast<int>(exe->program.kernels.size());
  stats.fused_nodes = exe->program.fused_nodes;
  stats.extern_steps = static_cast<int>(exe->program.steps.size()) - stats.kernels;
  stats.channels_last_values = exe->program.channels_last_values;
  for (const Step& s : exe->program.steps) {
    stats.parallel_kernels += s.parallel;
    if (s.onednn)
      ++(s.onednn->op == onednn::Plan::Op::linear   ? stats.onednn_linears
         : s.onednn->op == onednn::Plan::Op::matmul ? stats.onednn_matmuls
         : s.onednn->op == onednn::Plan::Op::pool   ? stats.onednn_pools
                                                    : stats.onednn_convs);
  }
  {
    std::lock_guard<std::mutex> lock(g_inject_mutex);
    g_last_stats = stats;
  }
  TJ_LOG(output_code,
         "llvm backend: {} kernel(s) for {} fused node(s), {} extern step(s) ({} oneDNN linear(s), {} conv(s), {} "
         "matmul(s){}{})",
         stats.kernels, stats.fused_nodes, stats.extern_steps, stats.onednn_linears, stats.onednn_convs,
         stats.onednn_matmuls, stats.onednn_pools ? ", " + std::to_string(stats.onednn_pools) + " pool(s)" : "",
         stats.channels_last_values
             ? "; " + std::to_string(stats.channels_last_values) + " value(s) channels-last across kernels"
             : "");
  for (const Step& s : exe->program.steps)
    if (s.onednn)
      TJ_LOG(output_code, "llvm backend: oneDNN step {} -> {}: {}", s.node->name(), s.members.back()->name(),
             s.onednn->describe());
  return CompiledFn([exe = std::shared_ptr<const Executable>(exe)](c10::ArrayRef<at::Tensor> args) {
    return run(*exe, args);
  });
}

}  // namespace

Expected<CompiledFn> compile_llvm(Program program, const std::vector<graph::TensorMeta>& inputs,
                                  const KernelCompiler& compile_one) {
  return make_executable(std::move(program), inputs, compile_one, nullptr);
}

Expected<CompiledFn> compile_llvm_point(std::shared_ptr<const graph::Graph> graph,
                                        const std::vector<graph::TensorMeta>& inputs, ProgramPoint* point) {
  auto program = lower(graph, lowering_options(LoweringTarget::host, *graph));
  if (!program) return program.error();
  auto kept = std::make_shared<const Program>(*program);
  auto fn = make_executable(std::move(*program), inputs, compile_kernel, nullptr);
  if (fn && point) *point = std::move(kept);
  return fn;
}

Expected<AllSizesFn> compile_llvm_all_sizes(const std::vector<ProgramPoint>& points) {
  std::vector<const Program*> programs;
  for (const ProgramPoint& p : points) programs.push_back(p.get());
  auto t = generalize_program(programs);
  if (!t) return t.error();
  Program program = t->program;
  std::vector<graph::TensorMeta> inputs;
  for (const graph::Node* ph : points[0]->graph->placeholders())
    inputs.push_back(ph->meta().tensor() ? *ph->meta().tensor() : graph::TensorMeta{});
  auto shared = std::make_shared<const ProgramTemplate>(std::move(*t));
  auto fn = make_executable(std::move(program), inputs, compile_kernel, shared);
  if (!fn) return fn.error();
  return AllSizesFn{std::move(*fn), [shared](const std::vector<graph::TensorMeta>& metas) {
                      return graph::aot::template_mismatch(shared->sizes, metas);
                    }};
}

}  // namespace tj::jit
