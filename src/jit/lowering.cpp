// Lowering: fusion groups of pointwise ops and reductions into loop-IR
// kernels, everything else extern; see lowering.h. The groups are built by
// `GroupBuilder` (fusion_group.h) with the emitters of lower_pointwise.cpp
// and lower_reductions.cpp; closing a group orders the kernel's dims (kept,
// then reduced), maps each buffer onto them and picks the flat layouts.
#include "jit/lowering.h"

#include "graph/passes/freeze.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graph/boxing.h"
#include "graph/effects.h"
#include "graph/op_registry.h"
#include "jit/fusion_group.h"
#include "jit/llvm_backend.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_layout.h"
#include "jit/sink_updates.h"
#include "support/log.h"

namespace tj::jit {

namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;

// How buffer `m` (read through `dims`, kernel dim -> tensor dim) lies for
// the flat path; see loop::Layout.
loop::Layout flat_layout(const TensorMeta& m, const std::vector<int>& dims, const std::vector<int64_t>& sizes,
                         int outer_rank) {
  int last = -1;
  bool outer = true, inner = true, all = true, none = true;
  for (size_t k = 0; k < dims.size(); ++k) {
    bool mapped = dims[k] >= 0;
    if (mapped) {
      if (dims[k] < last) return loop::Layout::other;  // dims out of order
      last = dims[k];
      none = false;
    }
    if (sizes[k] == 1) continue;
    bool is_outer = static_cast<int>(k) < outer_rank;
    all = all && mapped;
    if (is_outer) {
      outer = outer && mapped;
      inner = inner && !mapped;
    } else {
      inner = inner && mapped;
      outer = outer && !mapped;
    }
  }
  if (none) return loop::Layout::scalar;
  if (!m.is_contiguous()) return loop::Layout::other;
  if (all) return loop::Layout::full;
  if (outer) return loop::Layout::row;
  if (inner) return loop::Layout::col;
  return loop::Layout::other;
}

}  // namespace

namespace {

class Lowerer {
 public:
  Lowerer(std::shared_ptr<const graph::Graph> graph, const LoweringOptions& options) : options_(options) {
    program_.graph = std::move(graph);
  }

  Expected<Program> run() {
    const graph::Graph& g = *program_.graph;
    mark_bits_observed(g);
    const std::vector<const Node*> order = fusion_order(g);
    if (options_.onednn) plan_onednn(order);
    for (const Node* n : order) {
      switch (n->kind()) {
        case graph::NodeKind::placeholder:
          program_.input_slots.push_back(slot(n));
          break;
        case graph::NodeKind::output:
          close_group();
          break;
        case graph::NodeKind::get_attr:
          extern_step(n);
          break;
        case graph::NodeKind::call_function:
          if (onednn_inner_.count(n)) break;  // computed by the oneDNN step of its chain's last node
          if (auto m = onednn_last_.find(n); m != onednn_last_.end()) {
            onednn_step(*m->second);
            break;
          }
          if (auto status = visit(n); !status) return status.error();
          break;
      }
      if (!error_.empty()) return Error{error_};
    }
    if (!error_.empty()) return Error{error_};
    plan_releases();
    plan_donations();
    if (options_.onednn) program_.channels_last_values = onednn::plan_channels_last(program_);
    return std::move(program_);
  }

 private:
  Status visit(const Node* n) {
    if (try_fuse(n)) return ok_status();
    // extern: runs before the open group unless it reads one of its values
    if (group_) {
      for (const Node* in : n->inputs())
        if (group_->contains(in)) {
          close_group();
          break;
        }
    }
    extern_step(n);
    return ok_status();
  }

  // A node on float16/bfloat16 tensors eager cannot run stays extern (and raises as eager does).
  static bool reduced_ok(const Node* n) {
    bool reduced = false;
    for (const Node* in : n->inputs())
      if (const TensorMeta* m = in->meta().tensor()) reduced = reduced || is_reduced_float(m->dtype);
    if (const TensorMeta* m = n->meta().tensor()) reduced = reduced || is_reduced_float(m->dtype);
    return !reduced || eager_runs_on_cpu(*n);
  }

  // Values whose bits the program reads (`v.view(torch.int32)` of a float):
  // they, and everything they are computed from, are ATen's, since fused
  // code may round differently in the last bit (libmvec's sin, the order of
  // a sum) where only values within tolerance were promised.
  void mark_bits_observed(const graph::Graph& g) {
    std::vector<const Node*> todo;
    for (const Node* n : g.nodes())
      if (n->kind() == graph::NodeKind::call_function && n->op() && n->op()->qualified_name() == "aten::view.dtype") {
        const std::vector<Node*> inputs = n->inputs();  // a new vector per call
        todo.insert(todo.end(), inputs.begin(), inputs.end());
      }
    while (!todo.empty()) {
      const Node* n = todo.back();
      todo.pop_back();
      if (n->kind() != graph::NodeKind::call_function || !bits_observed_.insert(n).second) continue;
      const std::vector<Node*> inputs = n->inputs();
      todo.insert(todo.end(), inputs.begin(), inputs.end());
    }
    if (!bits_observed_.empty())
      TJ_LOG(perf, "llvm: {} node(s) run as ATen ops, unfused: view(dtype) reads the bits of their values",
             bits_observed_.size());
  }

  // Adds `n` to the open group (or a new one); false when it is extern.
  bool try_fuse(const Node* n) {
    if (bits_observed_.count(n)) return false;
    if (group_ && n->op() && n->op()->is_getitem && n->args().size() == 2 && n->args()[0].is_node() &&
        n->args()[1].is<int64_t>()) {
      auto expr = group_->result(n->args()[0].node(), static_cast<size_t>(n->args()[1].as<int64_t>()));
      return expr && group_->add_alias(n, *expr);
    }
    if (group_ && is_view_op(n) && !n->inputs().empty() && group_->contains(n->inputs()[0]) &&
        group_->same_values(n, n->inputs()[0]))
      return group_->add_alias(n, group_->member(n->inputs()[0]).expr);
    if (!n->op() || n->op()->is_getitem) return false;
    // only ops the tables fuse are tried on one-element tensors (never a
    // random op: that would draw from the generator eager draws from)
    auto r = reduction_op(n);
    if (r && options_.outer_sums_to_aten && sums_across_contiguous_rows(*n, *r)) {
      TJ_LOG(perf, "llvm: {} runs as ATen's op, unfused: it sums across rows and keeps the contiguous dim "
                   "(ATen's reduction vectorizes along it; a fused loop would read each row with a stride)",
             n->name());
      return false;
    }
    const Emitter* emit = r ? nullptr : pointwise_emitter(n);
    if ((!r && !emit) || !reduced_ok(n)) return false;
    if (r) {
      const std::vector<int64_t>& shape = r->input->meta().tensor()->sizes;
      if (group_ && (group_->shape() != shape || !group_->can_reduce(r->dims))) close_group();
      return add(n, *r->emit, Form::full, shape, &r->dims);
    }
    const std::vector<int64_t>& shape = n->meta().tensor()->sizes;
    if (group_ && too_wide_for(n)) close_group();
    Form form = group_ ? group_->form_of(shape) : Form::none;
    if (group_ && form == Form::none) close_group();
    return add(n, *emit, group_ ? form : Form::full, shape, nullptr);
  }

  // A pointwise node that reads no value of the open group would only
  // widen it with independent work (a list comprehension's 200 `x * 2`):
  // past kWideGroupInputs loaded tensors the group closes instead. LLVM's
  // time on a kernel grows faster than its buffers (the noalias scopes of
  // every pointer against every other: 400 buffers took seconds), while
  // the narrower groups print alike and compile once (the kernel cache).
  static constexpr size_t kWideGroupInputs = 8;
  bool too_wide_for(const Node* n) const {
    if (group_->inputs().size() < kWideGroupInputs) return false;
    for (const Node* in : n->inputs())
      if (group_->contains(in)) return false;
    return true;
  }

  bool add(const Node* n, const Emitter& emit, Form form, const std::vector<int64_t>& reader,
           const std::vector<bool>* reduce) {
    if (!group_) group_ = std::make_unique<GroupBuilder>(reduce ? reader : n->meta().tensor()->sizes);
    if (group_->add_member(n, emit, form, reader, reduce)) return true;
    if (group_->empty()) group_.reset();
    return false;
  }

  int slot(const Node* n) {
    auto [it, fresh] = program_.slot_of.try_emplace(n, program_.num_slots);
    if (fresh) ++program_.num_slots;
    return it->second;
  }

  void extern_step(const Node* n) {
    Step s;
    s.kind = Step::Kind::extern_op;
    s.node = n;
    s.slot = slot(n);
    if (options_.transposed_conv) s.tconv = tconv::form_of(*n);
    program_.steps.push_back(std::move(s));
  }

  // The oneDNN steps (onednn_plan.h), chosen in the order nodes are
  // visited; a node goes to one step at most. Which results stay
  // channels-last is decided once the steps are built (onednn_layout.h).
  void plan_onednn(const std::vector<const Node*>& order) {
    std::unordered_set<const Node*> taken;
    for (const Node* n : order) {
      if (n->kind() != graph::NodeKind::call_function) continue;
      std::unique_ptr<onednn::Match> m = onednn::match(*n, taken, bits_observed_);
      if (!m) continue;
      for (const Node* member : m->nodes) taken.insert(member);
      for (size_t i = 0; i + 1 < m->nodes.size(); ++i) onednn_inner_.insert(m->nodes[i]);
      onednn_last_[m->nodes.back()] = m.get();
      onednn_matches_.push_back(std::move(m));
    }
  }

  void onednn_step(const onednn::Match& m) {
    if (group_)  // reads a value of the open group: the group runs first
      for (const Node* r : m.reads)
        if (r && group_->contains(r)) {
          close_group();
          break;
        }
    Step s;
    s.kind = Step::Kind::extern_op;
    s.node = m.nodes.at(m.head);
    s.slot = slot(m.nodes.back());
    s.members = m.nodes;
    for (const Node* r : m.reads) s.inputs.push_back(r ? slot(r) : -1);
    s.onednn = m.plan;
    program_.steps.push_back(std::move(s));
  }

  void close_group() {
    if (!group_) return;
    std::unique_ptr<GroupBuilder> group = std::move(group_);
    loop::Kernel& k = group->kernel();
    Step s;
    s.kind = Step::Kind::kernel;
    // kernel dims: the kept dims of the shape, then the reduced ones
    const std::vector<int64_t>& shape = group->shape();
    const std::vector<bool>& reduced = group->reduced();
    std::vector<int> order, kdim_of(shape.size());
    for (int pass = 0; pass < 2; ++pass)
      for (size_t d = 0; d < shape.size(); ++d)
        if ((reduced.empty() ? false : reduced[d]) == (pass == 1)) order.push_back(static_cast<int>(d));
    k.sizes.clear();
    for (size_t i = 0; i < order.size(); ++i) {
      kdim_of[order[i]] = static_cast<int>(i);
      k.sizes.push_back(shape[order[i]]);
    }
    bool in_order = true;
    for (size_t i = 0; i < order.size(); ++i) in_order = in_order && order[i] == static_cast<int>(i);
    k.reduced_dims = 0;
    for (bool r : reduced) k.reduced_dims += r;
    const int outer_rank = static_cast<int>(k.sizes.size()) - k.reduced_dims;
    // tensor dim -> S dim becomes kernel dim -> tensor dim
    auto kernel_map = [&](const std::vector<int>& dims) {
      std::vector<int> map(k.sizes.size(), -1);
      for (size_t t = 0; t < dims.size(); ++t)
        if (dims[t] >= 0) map[kdim_of[dims[t]]] = static_cast<int>(t);
      return map;
    };

    bool has_relu = false;
    k.contiguous_outputs = in_order;
    for (const auto& member : group->members()) {
      const Node* node = member.node;
      has_relu |= node->op() && node->op()->qualified_name() == "aten::relu";
      bool used_outside = false;
      for (const Node* user : node->users()) used_outside |= !group->contains(user);
      if (!node->meta().tensor()) {  // a tuple: its getitems are the values
        if (used_outside) error_ = "lowering: " + node->name() + " is read outside its fusion group";
        continue;
      }
      if (!used_outside) continue;
      const TensorMeta& meta = *node->meta().tensor();
      loop::Output out;
      out.expr = member.expr;
      out.dtype = meta.dtype;
      out.full = member.form == Form::full;
      auto map = kernel_map(member.dims);
      out.layout = flat_layout(meta, map, k.sizes, outer_rank);
      bool flat = out.layout == loop::Layout::scalar ||
                  out.layout == (out.full || k.reduced_dims == 0 ? loop::Layout::full : loop::Layout::row);
      k.contiguous_outputs = k.contiguous_outputs && flat;
      k.outputs.push_back(out);
      s.outputs.push_back(slot(node));
      s.output_metas.push_back(meta);
      s.dim_maps.push_back(std::move(map));
    }
    for (size_t i = 0; i < group->inputs().size(); ++i) {
      const auto& use = group->inputs()[i];
      auto map = kernel_map(use.dims);
      loop::Input& in = k.inputs[i];
      for (size_t d = outer_rank; d < map.size(); ++d) in.inner = in.inner || map[d] >= 0;
      in.layout = flat_layout(*use.node->meta().tensor(), map, k.sizes, outer_rank);
      s.inputs.push_back(slot(use.node));
      s.dim_maps.push_back(std::move(map));
    }
    if (has_relu && options_.inject_bug == "relu_compile_error") {
      error_ = "debug_inject_bug=relu_compile_error: a fusion group contains relu";
      return;
    }
    // A bug of ours as it would show: a std::exception that is not LibTorch's.
    if (has_relu && options_.inject_bug == "relu_internal_error")
      throw std::out_of_range("debug_inject_bug=relu_internal_error: unordered_map::at");
    s.fail_at_run_time = has_relu && options_.inject_bug == "relu_runtime_error";
    k.relu_plus_one = has_relu && options_.inject_bug == "relu_accuracy_error";
    loop::deduplicate(k);
    int64_t numel = 1;
    for (int64_t size : k.sizes) numel *= size;
    for (const loop::Expr& e : k.exprs) s.parallel = s.parallel || loop::is_costly(e.op);
    s.parallel = s.parallel && numel >= (int64_t{1} << 16);
    k.name = "fused_" + std::to_string(program_.kernels.size());
    for (const auto& member : group->members())
      if (member.node->op()) k.name += "_" + member.node->op()->base_name();
    if (k.name.size() > 80) k.name.resize(80);
    for (const auto& member : group->members()) s.members.push_back(member.node);
    program_.fused_nodes += static_cast<int>(group->members().size());
    s.kernel = static_cast<int>(program_.kernels.size());
    program_.kernels.push_back(std::move(k));
    program_.steps.push_back(std::move(s));
  }

  // Each slot is released after the last step that reads it (slots the
  // output node reads are kept).
  void plan_releases() {
    std::vector<int> last(program_.num_slots, -1);
    auto reads = [&](const Step& s, const std::function<void(int)>& fn) {
      if (s.kind == Step::Kind::kernel) {
        for (int i : s.inputs) fn(i);
      } else if (s.onednn) {
        for (int i : s.inputs)
          if (i >= 0) fn(i);
      } else {
        for (const Node* in : s.node->inputs()) fn(program_.slot_of.at(in));
      }
    };
    for (size_t i = 0; i < program_.steps.size(); ++i)
      reads(program_.steps[i], [&](int slot) { last[slot] = static_cast<int>(i); });
    std::vector<bool> returned(program_.num_slots, false);
    if (const Node* out = program_.graph->output_node())
      for (const Node* in : out->inputs()) {
        last[program_.slot_of.at(in)] = static_cast<int>(program_.steps.size());
        returned[program_.slot_of.at(in)] = true;
      }
    // a oneDNN step that reads its residual last may sum into the residual's buffer (onednn_plan.h)
    for (size_t i = 0; i < program_.steps.size(); ++i) {
      Step& s = program_.steps[i];
      if (!s.onednn || s.onednn->op == onednn::Plan::Op::matmul || s.onednn->op == onednn::Plan::Op::pool ||
          !s.onednn->has_residual || s.inputs.size() < 4)
        continue;
      const int residual = s.inputs[3];
      if (residual < 0 || residual == s.inputs[0] || residual == s.inputs[1] || residual == s.inputs[2] ||
          last[residual] != static_cast<int>(i))
        continue;
      auto plan = std::make_shared<onednn::Plan>(*s.onednn);
      plan->residual_last_use = true;
      s.onednn = std::move(plan);
    }
    for (Step& s : program_.steps)
      for (int slot : s.outputs) s.internal.push_back(!returned[slot]);
    for (int slot = 0; slot < program_.num_slots; ++slot)
      if (last[slot] >= 0 && last[slot] < static_cast<int>(program_.steps.size()))
        program_.steps[last[slot]].release.push_back(slot);
  }

  // Kernel outputs written straight into the graph input AOT would copy
  // them into (lowering.h, Step::donated), when that is unobservable: the
  // input and every view of it are read only up to this kernel (by
  // kernels, or by extern steps: a training step's forward reads a
  // parameter through `t` and `mm` before its optimizer update writes it),
  // by this one element for element and through no view, no view of it is
  // a result, and no later step can raise (a failure must leave the inputs
  // as they were: the runtime then reruns the frame's bytecode).
  void plan_donations() {
    const graph::Graph& g = *program_.graph;
    const Node* out = g.output_node();
    if (!out || out->args().empty() || !out->args()[0].is_list()) return;
    const std::vector<Arg>& results = out->args()[0].items();
    std::unordered_map<int, int> producer;  // slot -> kernel step
    std::unordered_map<const Node*, int> step_of;  // node -> the step computing it
    for (size_t k = 0; k < program_.steps.size(); ++k) {
      const Step& s = program_.steps[k];
      if (s.kind == Step::Kind::kernel)
        for (int slot : s.outputs) producer[slot] = static_cast<int>(k);
      if (s.node) step_of.emplace(s.node, static_cast<int>(k));
      for (const Node* m : s.members) step_of.emplace(m, static_cast<int>(k));
    }
    const std::vector<Node*> placeholders = g.placeholders();
    for (size_t d = 0; d < placeholders.size(); ++d) {
      const Node* p = placeholders[d];
      if (!p->meta().tags.donated_to_output) continue;
      const auto i = static_cast<size_t>(*p->meta().tags.donated_to_output);
      if (i >= results.size() || !results[i].is_node()) continue;
      const Node* value = results[i].node();
      // No other result may be `value` or a view of it: it would come back
      // as the input's storage, where eager returns a tensor of its own
      // (`v = x * 2; x.copy_(v); v.unsqueeze_(0); return v`).
      bool unique_result = true, input_returned = false;
      for (const Arg& r : results) {
        unique_result &= !(r.is_node() && viewed_base(r.node()) == value && &r != &results[i]);
        input_returned |= r.is_node() && r.node() == p;
      }
      if (!unique_result || input_returned) continue;
      const int slot = program_.slot_of.at(value);
      auto made = producer.find(slot);
      if (made != producer.end() && read_only_up_to(*p, made->second, step_of, out) &&
          try_donate(static_cast<int>(d), *p, made->second, slot))
        continue;
      plan_write_back(static_cast<int>(d), *p, *value, slot, step_of, out);
    }
  }

  // Whether step `t` may raise at run time, whatever its inputs' sizes:
  // after such a step no input may be written (the rerun needs them as
  // they were).
  static bool may_fail(const Step& t) {
    return t.fail_at_run_time || (t.kind == Step::Kind::extern_op && graph::may_raise_on_data(*t.node));
  }

  // A new value of `input` that no kernel writes in place (a step after its
  // kernel may raise on data, or an extern op makes it) is copied into the
  // input after the last step that may fail (or the one making it, when
  // later), if nothing after that reads the old value: the value's buffer
  // goes there, not at the end of the graph when AOT's wrapper copies it
  // (a GAN's discriminator update, held across the generator's
  // binary_cross_entropy check: issue 41). The copy is the wrapper's, moved.
  void plan_write_back(int position, const Node& input, const Node& value, int value_slot,
                       const std::unordered_map<const Node*, int>& step_of, const Node* out) {
    auto made = step_of.find(&value);
    const TensorMeta* in = input.meta().tensor();
    const TensorMeta* m = value.meta().tensor();
    if (made == step_of.end() || viewed_base(&value) != &value || !in || !m || in->dtype != m->dtype ||
        in->sizes != m->sizes || in->strides != m->strides)
      return;
    int at = made->second;
    for (size_t j = 0; j < program_.steps.size(); ++j)
      if (may_fail(program_.steps[j])) at = std::max(at, static_cast<int>(j));
    if (at + 1 >= static_cast<int>(program_.steps.size()) || !read_only_up_to(input, at, step_of, out)) return;
    program_.steps[static_cast<size_t>(at)].write_back.emplace_back(value_slot, position);
  }

  // Whether `input` and the values viewing it (through view ops, the
  // items of ops returning views) are read by steps up to `k` only, are not
  // results, and kernel `k` reads none of the views (it writes `input`).
  bool read_only_up_to(const Node& input, int k, const std::unordered_map<const Node*, int>& step_of,
                       const Node* out) const {
    std::vector<const Node*> aliases = {&input};
    std::unordered_set<const Node*> seen = {&input};
    const Step& writer = program_.steps[k];
    for (size_t i = 0; i < aliases.size(); ++i) {
      const Node* a = aliases[i];
      if (a != &input && std::find(writer.inputs.begin(), writer.inputs.end(), program_.slot_of.at(a)) !=
                             writer.inputs.end())
        return false;
      for (const Node* user : a->users()) {
        if (user == out || user->kind() != graph::NodeKind::call_function || !user->op() ||
            user->op()->is_autograd_function)  // may hand its input back as it is
          return false;
        auto at = step_of.find(user);
        if (at == step_of.end() || at->second > k) return false;
        if (viewed_base(user) != user && seen.insert(user).second) aliases.push_back(user);
      }
    }
    return true;
  }

  // The value `n` views, through view ops and the items of ops returning
  // views (split): `n` itself when it is no view.
  static const Node* viewed_base(const Node* n) {
    while (n->kind() == graph::NodeKind::call_function && n->op() &&
           (n->op()->traits.view || n->op()->is_getitem || is_view_op(n)) && !n->inputs().empty())
      n = n->inputs()[0];
    return n;
  }

  bool try_donate(int position, const Node& input, int k, int value_slot) {
    Step& s = program_.steps[k];
    const TensorMeta* in = input.meta().tensor();
    const size_t o = std::find(s.outputs.begin(), s.outputs.end(), value_slot) - s.outputs.begin();
    const TensorMeta& m = s.output_metas[o];
    if (!in || in->dtype != m.dtype || in->sizes != m.sizes || in->strides != m.strides ||
        in->strides != TensorMeta::contiguous(in->sizes, in->dtype).strides || s.fail_at_run_time)
      return false;
    const int input_slot = program_.slot_of.at(&input);
    for (size_t j = 0; j < program_.steps.size(); ++j) {
      const Step& t = program_.steps[j];
      const bool reads = std::find(t.inputs.begin(), t.inputs.end(), input_slot) != t.inputs.end();
      if (static_cast<int>(j) > k && (reads || may_fail(t))) return false;
    }
    loop::Kernel& kernel = program_.kernels[s.kernel];
    const auto x = std::find(s.inputs.begin(), s.inputs.end(), input_slot) - s.inputs.begin();
    if (std::count(s.inputs.begin(), s.inputs.end(), input_slot) > 1) return false;
    if (x < static_cast<long>(s.inputs.size())) {
      // read here too: element for element, at the place it is written
      if (kernel.reduced_dims != 0 || s.dim_maps[o] != s.dim_maps[s.outputs.size() + x]) return false;
      kernel.outputs[o].in_place_of = static_cast<int>(x);
    }
    s.donated.resize(s.outputs.size(), -1);
    s.donated[o] = position;
    return true;
  }

  LoweringOptions options_;
  Program program_;
  std::unique_ptr<GroupBuilder> group_;
  std::string error_;
  std::unordered_set<const Node*> bits_observed_;  // mark_bits_observed
  // plan_onednn: the steps, their chains' last nodes, and the other nodes they compute
  std::vector<std::unique_ptr<onednn::Match>> onednn_matches_;
  std::unordered_map<const Node*, const onednn::Match*> onednn_last_;
  std::unordered_set<const Node*> onednn_inner_;
};

}  // namespace

// oneDNN steps (host only) unless TRACEJIT_ONEDNN=0, or the graph records
// gradients for an input (a training graph's forward) and TRACEJIT_ONEDNN is
// not "all". An inference graph's parameters may require grad (no_grad): AOT
// tags them "grad_unused" (graph::is_inference_graph).
// Why not in training (measured, issue 41): oneDNN's direct convolution
// (brgconv, channels-last) sums in another order than ATen's kernels, with
// 2-3.5x their RMS error against float64 on one conv (K = 576..2304) and
// 1.55x on resnet18's training forward; nothing is stale (the packed
// weights follow every optimizer step). A few SGD-with-momentum steps of a
// batch-4 resnet18 (losses 1.73 -> 9.72) grow that into losses 0.3 apart
// from eager's (train_resnet18@llvm wants 1e-4), though its parameters end
// nearer the float64 run's than eager's do (RMS 8.6 against 11.1); with
// TRACEJIT_ONEDNN=all, train_densenet121_adam@llvm's losses end further
// from float64 than eager's and the torchvision_training transcript
// (compile_all_transcript@llvm) prints other rounded losses.
LoweringOptions lowering_options(LoweringTarget target, const graph::Graph& graph) {
  LoweringOptions options;
  options.inject_bug = debug_inject_bug();
  if (target != LoweringTarget::host) return options;
  options.transposed_conv = true;
  options.outer_sums_to_aten = true;
  const bool training = !graph::is_inference_graph(graph);
  options.onednn = onednn::enabled() && (!training || onednn::in_training());
  if (training && !options.onednn && onednn::enabled()) {
    onednn::note_off_for_training();
    TJ_LOG(perf, "llvm backend: no oneDNN steps in this graph: an input requires grad (a training graph's forward); "
                 "its convolutions and Linears run as ATen's ops");
  }
  return options;
}

Expected<Program> lower(std::shared_ptr<const graph::Graph> graph, const LoweringOptions& options) {
  try {
    if (auto sunk = sink_written_back_updates(*graph)) graph = std::move(sunk);
    return Lowerer(std::move(graph), options).run();
  } catch (const std::exception& e) {
    return graph::detail::exception_error("lowering failed: ", e);
  }
}

}  // namespace tj::jit
