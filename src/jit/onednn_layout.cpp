// Channels-last values between oneDNN steps: see onednn_layout.h.
#include "jit/onednn_layout.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "graph/op_registry.h"
#include "jit/onednn_geometry.h"
#include "jit/onednn_winograd.h"

namespace tj::jit::onednn {

namespace {

bool conv_or_pool(const Step& s) {
  return s.onednn && (s.onednn->op == Plan::Op::conv || s.onednn->op == Plan::Op::pool);
}

// A channels-last layout exists for this rank (nwc, nhwc, ndhwc).
bool has_channels_last(const graph::TensorMeta* m) { return m && m->sizes.size() >= 3 && m->sizes.size() <= 5; }

// Kernel output `o` of `s` may be written channels-last: a pointwise kernel's output of its whole iteration space
// in the kernel's dim order, eager's strides contiguous (the kernel's loops then follow whatever strides it gets),
// not written into a graph input.
bool free_kernel_output(const Program& p, const Step& s, size_t o) {
  const loop::Kernel& k = p.kernels[static_cast<size_t>(s.kernel)];
  const graph::TensorMeta& m = s.output_metas[o];
  if (k.reduced_dims != 0 || !k.outputs[o].full || k.outputs[o].in_place_of >= 0 || s.fail_at_run_time ||
      (!s.donated.empty() && s.donated[o] >= 0) || !has_channels_last(&m) || m.sizes != k.sizes ||
      !m.is_contiguous() || m.storage_offset != 0)
    return false;
  const std::vector<int>& map = s.dim_maps[o];
  for (size_t d = 0; d < map.size(); ++d)
    if (map[d] != static_cast<int>(d)) return false;
  return true;
}

// The dim of `aten::cat` node `n` when it joins tensors of one rank that has a channels-last layout, as its
// channels (dim 1); else -1.
int cat_channels(const graph::Node& n) {
  if (!n.op() || n.op()->qualified_name() != "aten::cat" || n.args().empty() || !n.args()[0].is_list()) return -1;
  int64_t dim = 0;
  if (n.args().size() > 1) {
    if (!n.args()[1].is<int64_t>()) return -1;
    dim = n.args()[1].as<int64_t>();
  }
  for (const auto& [name, value] : n.kwargs()) {
    if (name != "dim" || !value.is<int64_t>()) return -1;
    dim = value.as<int64_t>();
  }
  const graph::TensorMeta* out = n.meta().tensor();
  if (!has_channels_last(out)) return -1;
  const auto rank = static_cast<int64_t>(out->sizes.size());
  for (const graph::Arg& item : n.args()[0].items()) {
    const graph::TensorMeta* m = item.is_node() ? item.node()->meta().tensor() : nullptr;
    if (!m || m->sizes.size() != out->sizes.size() || m->dtype != out->dtype) return -1;
  }
  return dim == 1 || dim == 1 - rank ? 1 : -1;
}

std::vector<int> read_slots(const Program& p, const graph::Node& n) {
  std::vector<int> slots;
  for (const graph::Node* in : n.inputs())
    if (auto it = p.slot_of.find(in); it != p.slot_of.end()) slots.push_back(it->second);
  return slots;
}

struct Uses {
  std::vector<bool> fixed;                 // read where eager's strides are needed (or a graph output)
  std::vector<bool> outside;                // read by an llvm kernel or a `cat` (not only by oneDNN steps)
  std::vector<bool> candidate;             // may be channels-last
};

// TRACEJIT_ONEDNN_LAYOUT=0 (environment, read once): only oneDNN steps read channels-last values (kernels and cats
// read eager's strides), as before this pass.
bool across_kernels() {
  static const bool on = [] {
    const char* v = std::getenv("TRACEJIT_ONEDNN_LAYOUT");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

Uses uses_of(const Program& p) {
  const bool across = across_kernels();
  const auto n = static_cast<size_t>(p.num_slots);
  Uses u{std::vector<bool>(n, false), std::vector<bool>(n, false), std::vector<bool>(n, false)};
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.kind == Step::Kind::kernel) {
      for (int slot : s.inputs) (across ? u.outside : u.fixed)[static_cast<size_t>(slot)] = true;
      for (size_t o = 0; o < s.outputs.size(); ++o)
        u.candidate[static_cast<size_t>(s.outputs[o])] = free_kernel_output(p, s, o);
    } else if (s.onednn) {
      for (size_t r = 0; r < s.inputs.size(); ++r)  // a conv or pool takes its input and residual in any strides
        if (s.inputs[r] >= 0 && !(conv_or_pool(s) && (r == 0 || r == 3))) u.fixed[static_cast<size_t>(s.inputs[r])] = true;
      u.candidate[static_cast<size_t>(s.slot)] = conv_or_pool(s) && has_channels_last(s.members.back()->meta().tensor());
    } else if (s.node) {
      const bool cat = across && cat_channels(*s.node) == 1;  // takes its operands in any strides (run_cat)
      for (int slot : read_slots(p, *s.node)) (cat ? u.outside : u.fixed)[static_cast<size_t>(slot)] = true;
      u.candidate[static_cast<size_t>(s.slot)] = cat;
    }
  }
  if (const graph::Node* out = p.graph->output_node())
    for (const graph::Node* in : out->inputs()) u.fixed[static_cast<size_t>(p.slot_of.at(in))] = true;
  return u;
}

bool reads_channels_last(const std::vector<int>& slots, const Uses& u) {
  for (int slot : slots)
    if (u.candidate[static_cast<size_t>(slot)]) return true;
  return false;
}

// Step::cat and Step::cat_capacity of the cats along channels that read a channels-last value.
void plan_cats(Program& p, const std::vector<std::vector<int>>& made_of, const Uses& u) {
  std::vector<Step*> kept;
  for (Step& s : p.steps) {
    if (s.kind != Step::Kind::extern_op || s.onednn || !s.node || cat_channels(*s.node) != 1 ||
        !reads_channels_last(made_of[static_cast<size_t>(s.slot)], u))
      continue;
    const bool cl = u.candidate[static_cast<size_t>(s.slot)];
    s.cat = cl ? Step::Cat::channels_last : Step::Cat::eager_strides;
    if (cl) kept.push_back(&s);
  }
  auto parts = [](const Step* s) -> const std::vector<graph::Arg>& { return s->node->args()[0].items(); };
  for (Step* s : kept) {
    s->cat_capacity = s->node->meta().tensor()->sizes[1];
    for (const Step* t : kept) {
      const std::vector<graph::Arg>& mine = parts(s);
      const std::vector<graph::Arg>& theirs = parts(t);
      bool prefix = theirs.size() > mine.size();
      for (size_t i = 0; prefix && i < mine.size(); ++i) prefix = theirs[i].node() == mine[i].node();
      if (prefix) s->cat_capacity = std::max(s->cat_capacity, t->node->meta().tensor()->sizes[1]);
    }
  }
}

}  // namespace

int plan_channels_last(Program& p) {
  Uses u = uses_of(p);
  // slot -> the slots the kernel or `cat` writing it reads
  std::vector<std::vector<int>> made_of(u.candidate.size());
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::kernel)
      for (int slot : s.outputs) made_of[static_cast<size_t>(slot)] = s.inputs;
    if (s.kind == Step::Kind::extern_op && !s.onednn && u.candidate[static_cast<size_t>(s.slot)])
      made_of[static_cast<size_t>(s.slot)] = read_slots(p, *s.node);
  }
  // Drop what needs eager's strides, then kernel and `cat` outputs that read no channels-last value (writing them
  // channels-last would only move the reorder into the kernel), until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t slot = 0; slot < u.candidate.size(); ++slot) {
      if (!u.candidate[slot]) continue;
      bool keep = !u.fixed[slot];
      if (keep && !made_of[slot].empty()) keep = reads_channels_last(made_of[slot], u);
      if (keep) continue;
      u.candidate[slot] = false;
      changed = true;
    }
  }
  int made = 0;
  plan_cats(p, made_of, u);
  for (Step& s : p.steps) {
    if (s.kind == Step::Kind::kernel) {
      for (size_t o = 0; o < s.outputs.size(); ++o) {
        if (!u.candidate[static_cast<size_t>(s.outputs[o])]) continue;
        s.output_metas[o].strides = channels_last_strides(s.output_metas[o].sizes);
        ++made;
      }
      continue;
    }
    made += s.cat == Step::Cat::channels_last;
    if (!conv_or_pool(s) || !u.candidate[static_cast<size_t>(s.slot)]) continue;
    auto plan = std::make_shared<Plan>(*s.onednn);
    plan->keep_channels_last = true;
    plan->kernels_read = u.outside[static_cast<size_t>(s.slot)];
    made += plan->kernels_read;
    s.onednn = std::move(plan);
  }
  return made;
}

namespace {

// The last cat along the channels written with room for more (Step::cat_capacity: a densenet block's chain of
// cats, each of the parts of the one before and more): its buffer, and the parts in its first `filled`
// channels. The buffer is held (no buffer pool takes it while a later cat may still extend it); the next chain,
// or the chain's widest cat, lets it go.
struct OpenCat {
  struct Part {
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
    const c10::TensorImpl* address = nullptr;
    const void* data = nullptr;
    uint32_t version = 0;
  };
  at::Tensor buffer;
  std::vector<Part> parts;
  int64_t filled = 0;
};
thread_local OpenCat t_open;

// `t` is the part remembered (alive, the same data, not written since: every write bumps the version).
bool same_part(const OpenCat::Part& p, const at::Tensor& t) {
  return p.address == t.unsafeGetTensorImpl() && !p.impl.expired() && t.has_storage() && p.data == t.data_ptr() &&
         p.version == t.unsafeGetTensorImpl()->version_counter().current_version();
}

OpenCat::Part part_of(const at::Tensor& t) {
  return {c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr()),
          t.unsafeGetTensorImpl(), t.data_ptr(), t.unsafeGetTensorImpl()->version_counter().current_version()};
}

// How many of `parts` the open cat holds already, when it holds a prefix of them and has room for the rest.
size_t open_prefix(const std::vector<at::Tensor>& parts, const std::vector<int64_t>& sizes) {
  const at::Tensor& b = t_open.buffer;
  if (!b.defined() || parts.size() <= t_open.parts.size() || b.dim() != static_cast<int64_t>(sizes.size()) ||
      b.scalar_type() != parts[0].scalar_type() || b.size(1) < sizes[1])
    return 0;
  for (int64_t d = 0; d < b.dim(); ++d)
    if (d != 1 && b.size(d) != sizes[static_cast<size_t>(d)]) return 0;
  for (size_t i = 0; i < t_open.parts.size(); ++i)
    if (!same_part(t_open.parts[i], parts[i])) return 0;
  return t_open.parts.size();
}

// Copies parts[from...] into `buffer` from channel `at` on; returns the channel after them.
int64_t write_parts(const at::Tensor& buffer, const std::vector<at::Tensor>& parts, size_t from, int64_t at) {
  for (size_t i = from; i < parts.size(); ++i) {
    materialize(parts[i]);  // a Winograd result not reordered out yet (onednn_winograd.h)
    buffer.narrow(1, at, parts[i].size(1)).copy_(parts[i]);
    at += parts[i].size(1);
  }
  return at;
}

// A channels-last cat of plain parts (run_cat), in the open cat's buffer or a new one `capacity` channels wide.
at::Tensor cat_channels_last(const std::vector<at::Tensor>& parts, const std::vector<int64_t>& sizes,
                             int64_t capacity) {
  bool versioned = true;
  for (const at::Tensor& t : parts) versioned = versioned && !t.is_inference();  // (no version counter)
  if (const size_t held = versioned ? open_prefix(parts, sizes) : 0; held > 0) {
    t_open.filled = write_parts(t_open.buffer, parts, held, t_open.filled);
    for (size_t i = held; i < parts.size(); ++i) t_open.parts.push_back(part_of(parts[i]));
    at::Tensor out = t_open.buffer.narrow(1, 0, sizes[1]);
    if (t_open.filled == t_open.buffer.size(1)) t_open = OpenCat{};
    return out;
  }
  std::vector<int64_t> wide = sizes;
  wide[1] = std::max(capacity, sizes[1]);
  at::Tensor buffer = at::empty_strided(wide, channels_last_strides(wide), parts[0].options());
  write_parts(buffer, parts, 0, 0);
  if (wide[1] == sizes[1] || !versioned) return buffer.narrow(1, 0, sizes[1]);
  t_open = OpenCat{buffer, {}, sizes[1]};
  for (const at::Tensor& t : parts) t_open.parts.push_back(part_of(t));
  return buffer.narrow(1, 0, sizes[1]);
}

}  // namespace

at::Tensor run_cat(const std::vector<at::Tensor>& parts, bool channels_last, int64_t capacity,
                   const graph::TensorMeta& eager) {
  bool plain = !parts.empty();
  for (const at::Tensor& t : parts)
    plain = plain && t.defined() && t.device().is_cpu() && t.dim() == parts[0].dim() && t.dim() >= 3 &&
            t.dim() <= 5 && t.scalar_type() == parts[0].scalar_type() && !t.is_neg() && !t.is_conj();
  std::vector<int64_t> sizes;
  if (plain) {
    sizes = parts[0].sizes().vec();
    sizes[1] = 0;
    for (const at::Tensor& t : parts) {
      for (int64_t d = 0; d < t.dim(); ++d) plain = plain && (d == 1 || t.size(d) == sizes[static_cast<size_t>(d)]);
      sizes[1] += t.size(1);
    }
  }
  if (!plain) {  // ATen's op (and its errors), its result in the strides asked for
    at::Tensor out = at::cat(parts, 1);
    if (channels_last || out.strides() == c10::IntArrayRef(eager.strides) || out.sizes() != c10::IntArrayRef(eager.sizes))
      return out;
    return at::empty_strided(eager.sizes, eager.strides, out.options()).copy_(out);
  }
  if (channels_last) return cat_channels_last(parts, sizes, capacity);
  at::Tensor out = at::empty_strided(sizes, sizes == eager.sizes ? eager.strides : contiguous_strides(sizes),
                                     parts[0].options());
  write_parts(out, parts, 0, 0);
  return out;
}

void forget_open_cat() { t_open = OpenCat{}; }

}  // namespace tj::jit::onednn
