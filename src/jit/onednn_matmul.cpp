// Batched matmul steps (see onednn_matmul.h): which nodes one oneDNN matmul
// computes, and running it: memory descriptors from the operands' strides
// (the batch split into the absorbed view's dims), a primitive cache keyed
// by sizes, strides and post-ops, and the output given eager's strides.
#include "jit/onednn_matmul.h"
#include "jit/onednn_buffers.h"
#include "jit/onednn_memory.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "graph/op_registry.h"

namespace tj::jit::onednn {

namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using dnnl::memory;
using dt = memory::data_type;

// Below this many multiply-adds oneDNN's fixed cost per call is not won back against ATen's bmm.
constexpr int64_t kMinWork = int64_t{1} << 18;

std::string name_of(const Node& n) {
  return n.kind() == graph::NodeKind::call_function && n.op() ? n.op()->qualified_name() : std::string();
}

const TensorMeta* f32_cpu(const Node* n) {
  const TensorMeta* m = n ? n->meta().tensor() : nullptr;
  return m && m->defined && m->dtype == c10::ScalarType::Float && m->device.is_cpu() ? m : nullptr;
}

bool number(const Arg& a, double* out) {
  if (a.is<double>()) *out = a.as<double>();
  else if (a.is<int64_t>()) *out = static_cast<double>(a.as<int64_t>());
  else return false;
  return true;
}

// A keyword argument `name` of value `want`, or absent; no other keyword.
bool only_kwarg(const Node& n, const char* name, double want) {
  for (const auto& [key, value] : n.kwargs()) {
    double v = 0;
    if (key != name || !number(value, &v) || v != want) return false;
  }
  return true;
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// `t` broadcasts to `out` (numpy rules, no wider than it).
bool broadcasts_to(const std::vector<int64_t>& t, const std::vector<int64_t>& out) {
  if (t.size() > out.size()) return false;
  const size_t lead = out.size() - t.size();
  for (size_t d = 0; d < t.size(); ++d)
    if (t[d] != 1 && t[d] != out[lead + d]) return false;
  return true;
}

void add_binary(Match& m, const Node* operand) {
  PostOp p;
  p.kind = PostOp::Kind::binary_add;
  p.operand = static_cast<int>(m.reads.size());
  m.reads.push_back(operand);
  m.plan->post.push_back(p);
}

// The permutation a `transpose.int` or `permute` node applies, or empty.
std::vector<int64_t> permutation_of(const Node& n, size_t rank) {
  const std::string name = name_of(n);
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  auto dim = [&](const Arg& a, int64_t* out) {
    if (!a.is<int64_t>()) return false;
    *out = a.as<int64_t>() < 0 ? a.as<int64_t>() + static_cast<int64_t>(rank) : a.as<int64_t>();
    return *out >= 0 && *out < static_cast<int64_t>(rank);
  };
  if (name == "aten::transpose.int" && n.args().size() == 3) {
    int64_t d0 = 0, d1 = 0;
    if (!dim(n.args()[1], &d0) || !dim(n.args()[2], &d1)) return {};
    std::swap(perm[d0], perm[d1]);
    return perm;
  }
  if (name == "aten::permute" && n.args().size() == 2 && n.args()[1].is_list() && n.args()[1].items().size() == rank) {
    std::vector<bool> seen(rank, false);
    for (size_t d = 0; d < rank; ++d)
      if (!dim(n.args()[1].items()[d], &perm[d]) || seen[perm[d]]) return {};
      else seen[perm[d]] = true;
    return perm;
  }
  return {};
}

// `transpose`/`permute` of the viewed output read only by a contiguous clone:
// both absorbed (the primitive writes the permuted layout); the clone, or null.
const Node* absorb_permuted_copy(Match& m, const Node* cur, const Node& user,
                                 const std::unordered_set<const Node*>& taken,
                                 const std::unordered_set<const Node*>& excluded) {
  const TensorMeta* value = f32_cpu(cur);
  if (!value || m.plan->out_view.empty() || !m.plan->out_perm.empty() || user.users().size() != 1) return nullptr;
  std::vector<int64_t> perm = permutation_of(user, value->sizes.size());
  const Node* clone = user.users()[0];
  // the rows stay dense (oneDNN's kernels write N contiguous)
  if (perm.empty() || perm.back() != static_cast<int64_t>(perm.size()) - 1 || !user.args()[0].is_node() || user.args()[0].node() != cur || taken.count(clone) ||
      excluded.count(clone) || clone->kind() != graph::NodeKind::call_function ||
      name_of(*clone) != "aten::clone" || clone->args().size() != 1)
    return nullptr;
  for (const auto& [key, value] : clone->kwargs())
    if (key != "memory_format" || !value.is<c10::MemoryFormat>() || value.as<c10::MemoryFormat>() != c10::MemoryFormat::Contiguous)
      return nullptr;
  if (clone->kwargs().empty()) return nullptr;  // preserve_format keeps the permuted strides
  const TensorMeta* out = f32_cpu(clone);
  if (!out || !out->is_contiguous()) return nullptr;
  m.plan->out_perm = perm;
  m.nodes.push_back(&user);
  m.nodes.push_back(clone);
  return clone;
}

// Extends `m` by `user` (the one reader of `cur`) when oneDNN's matmul can apply it.
bool absorb(Match& m, const Node* cur, const Node& user) {
  const TensorMeta* value = f32_cpu(cur);
  const TensorMeta* out = f32_cpu(&user);
  if (!value || !out || user.args().empty() || !m.plan->out_perm.empty()) return false;
  const std::string name = name_of(user);
  const Arg& a = user.args()[0];
  const bool cur_first = a.is_node() && a.node() == cur;
  if (name == "aten::_unsafe_view" || name == "aten::view" || name == "aten::reshape") {
    // only the batch split into dims, first: [B, M, N] -> [b0, b1, ..., M, N]
    const std::vector<int64_t>& s = out->sizes;
    if (!cur_first || !m.plan->out_view.empty() || !m.plan->post.empty() || m.nodes.size() != 1 || s.size() < 3 ||
        s.size() > 6 || s[s.size() - 2] != value->sizes[1] || s.back() != value->sizes[2] ||
        product(s, 0, s.size() - 2) != value->sizes[0] || !out->is_contiguous())
      return false;
    m.plan->out_view = s;
    m.nodes.push_back(&user);
    return true;
  }
  if (out->sizes != value->sizes || user.args().size() != 2) return false;
  const Arg& b = user.args()[1];
  PostOp p;
  p.alg = Eltwise::scale;
  if (name == "aten::mul.Tensor" || name == "aten::mul.Scalar") {
    if (!user.kwargs().empty() || !((cur_first && number(b, &p.alpha)) || (b.is_node() && b.node() == cur && number(a, &p.alpha))))
      return false;
  } else if (name == "aten::div.Tensor" || name == "aten::div.Scalar") {
    double d = 0;
    if (!user.kwargs().empty() || !cur_first || !number(b, &d) || d == 0) return false;
    p.alpha = 1.0 / d;  // within a rounding of eager's division
  } else if (name == "aten::add.Tensor") {
    if (!only_kwarg(user, "alpha", 1.0)) return false;
    const Arg& other = cur_first ? b : a;
    const TensorMeta* t = other.is_node() ? f32_cpu(other.node()) : nullptr;
    if (!t || other.node() == cur || !(cur_first || (b.is_node() && b.node() == cur)) ||
        !broadcasts_to(t->sizes, value->sizes))
      return false;
    add_binary(m, other.node());
    m.nodes.push_back(&user);
    return true;
  } else {
    return false;
  }
  m.plan->post.push_back(p);
  m.nodes.push_back(&user);
  return true;
}

// ---- run time

struct CachedMatmul {
  std::string refused;  // non-empty: oneDNN does not take this case (why)
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc src, weights, dst;
  std::vector<memory::desc> operands;  // of the binary post-ops, in order
  bool full_operands = false;          // the operands expanded to the output's sizes (see run_matmul)
};

std::mutex g_mutex;  // guards the cache and the counters
std::unordered_map<std::string, std::shared_ptr<CachedMatmul>> g_cache;
constexpr size_t kCapacity = 1024;
MatmulStats g_stats;

// An operand [B, R, C] of a bmm as oneDNN memory of rank `lead.size() + 2`:
// the batch split into `lead` (row-major), a batch stride of 0 (an expanded
// operand) as a broadcast dim of size 1. An operand already of that rank (a
// head split's source) keeps its own dims and strides, stride-0 dims as
// broadcast dims of size 1 the same way.
memory::desc operand_md(const at::Tensor& t, const std::vector<int64_t>& lead) {
  memory::dims dims, strides;
  const int64_t rank = t.dim();
  if (rank == static_cast<int64_t>(lead.size()) + 2 && rank != 3) {
    const int64_t dense = t.size(rank - 2) * t.size(rank - 1);
    for (int64_t d = 0; d < rank; ++d) {
      const bool broadcast = d < rank - 2 && t.stride(d) == 0;
      dims.push_back(broadcast ? 1 : t.size(d));
      strides.push_back(broadcast ? dense : t.stride(d));
    }
    return memory::desc(dims, dt::f32, strides);
  }
  int64_t step = t.stride(0);
  dims.resize(lead.size());
  strides.resize(lead.size());
  // (a broadcast dim's stride: that of a dense batch, oneDNN takes no 0)
  const int64_t dense = t.size(1) * t.size(2);
  for (size_t i = lead.size(); i-- > 0;) {
    dims[i] = step == 0 ? 1 : lead[i];
    strides[i] = step == 0 ? dense : step;
    step *= lead[i];
  }
  for (int d = 1; d < 3; ++d) {
    dims.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  return memory::desc(dims, dt::f32, strides);
}

void append_dims(std::string& key, const char* tag, c10::IntArrayRef v) {
  key += tag;
  for (int64_t x : v) key += std::to_string(x) + ",";
}

// An operand oneDNN reads through its strides: inner dims of size > 1 with
// positive strides, and one of its two inner dims dense (else a copy).
at::Tensor readable(const at::Tensor& t) {
  const int64_t r = t.dim();
  for (int64_t d = r - 2; d < r; ++d)
    if (t.size(d) > 1 && t.stride(d) <= 0) return t.contiguous();
  for (int64_t d = 0; d < r - 2; ++d)
    if (t.stride(d) < 0) return t.contiguous();
  if (t.stride(r - 1) != 1 && t.stride(r - 2) != 1) return t.contiguous();
  return t;
}

// An operand's [batch, rows, cols] as bmm sees it (a head split's source: its leading dims multiplied).
std::vector<int64_t> as_3d(const at::Tensor& t) {
  const int64_t r = t.dim();
  if (r < 3) return {};
  int64_t batch = 1;
  for (int64_t d = 0; d < r - 2; ++d) batch *= t.size(d);
  return {batch, t.size(r - 2), t.size(r - 1)};
}

// bmm's operand `operand` when it is a head split's copy: `view(clone(s, memory_format=contiguous), sizes)` (the
// view and the clone read by nothing else) of an s of the rank of the output's view with its leading sizes
// (attention's q, k, v: [B, H, T, D] views of one projection). Returns s and sets `clone`, or null.
const Node* head_split_source(Match& m, const Node* operand, const std::unordered_set<const Node*>& taken,
                              const std::unordered_set<const Node*>& excluded, const Node** clone) {
  const std::string name = name_of(*operand);
  if ((name != "aten::_unsafe_view" && name != "aten::view" && name != "aten::reshape") ||
      operand->users().size() != 1 || operand->args().size() != 2 || !operand->args()[0].is_node() ||
      !operand->kwargs().empty() || taken.count(operand) || excluded.count(operand))
    return nullptr;
  const Node* c = operand->args()[0].node();
  if (name_of(*c) != "aten::clone" || c->users().size() != 1 || c->args().size() != 1 || !c->args()[0].is_node() ||
      c->kwargs().size() != 1 || taken.count(c) || excluded.count(c))
    return nullptr;
  const Arg* format = c->kwarg("memory_format");
  if (!format || !format->is<c10::MemoryFormat>() || format->as<c10::MemoryFormat>() != c10::MemoryFormat::Contiguous)
    return nullptr;
  const Node* source = c->args()[0].node();
  const TensorMeta *s = f32_cpu(source), *copy = f32_cpu(c), *viewed = f32_cpu(operand);
  const std::vector<int64_t>& out = m.plan->out_view;
  if (!s || !copy || !viewed || out.empty() || s->sizes.size() != out.size() || copy->sizes != s->sizes ||
      viewed->sizes.size() != 3 || !std::equal(out.begin(), out.end() - 2, s->sizes.begin()) ||
      s->sizes[s->sizes.size() - 2] != viewed->sizes[1] || s->sizes.back() != viewed->sizes[2])
    return nullptr;
  *clone = c;
  return source;
}

// Reads a or b (`which`) through its head split's source where it is one (Plan::a_view, b_view): the clone and
// the view go into `before`, the nodes the step computes ahead of its head.
void read_head_split(Match& m, int which, const std::unordered_set<const Node*>& taken,
                     const std::unordered_set<const Node*>& excluded, std::vector<const Node*>& before) {
  const Node* operand = m.reads[static_cast<size_t>(which)];
  const Node* clone = nullptr;
  const Node* source = head_split_source(m, operand, taken, excluded, &clone);
  if (!source || (which == 1 && m.reads[0] == operand)) return;
  (which == 0 ? m.plan->a_view : m.plan->b_view) = f32_cpu(operand)->sizes;
  m.reads[static_cast<size_t>(which)] = source;
  before.push_back(clone);
  before.push_back(operand);
}

}  // namespace

std::unique_ptr<Match> match_matmul(const Node& head, const std::unordered_set<const Node*>& taken,
                                    const std::unordered_set<const Node*>& excluded) {
  const bool baddbmm = name_of(head) == "aten::baddbmm";
  const size_t first = baddbmm ? 1 : 0;
  if (head.args().size() != first + 2) return nullptr;
  double alpha = 1, beta = 1;
  for (const auto& [key, value] : head.kwargs())
    if (!baddbmm || !((key == "alpha" && number(value, &alpha)) || (key == "beta" && number(value, &beta))))
      return nullptr;
  if (beta != 0 && beta != 1) return nullptr;
  for (const Arg& a : head.args())
    if (!a.is_node()) return nullptr;
  const Node* an = head.args()[first].node();
  const Node* bn = head.args()[first + 1].node();
  const TensorMeta *a = f32_cpu(an), *b = f32_cpu(bn), *out = f32_cpu(&head);
  if (!a || !b || !out || a->sizes.size() != 3 || b->sizes.size() != 3 || out->sizes.size() != 3) return nullptr;
  const int64_t batch = a->sizes[0], m = a->sizes[1], k = a->sizes[2], n = b->sizes[2];
  if (b->sizes[0] != batch || b->sizes[1] != k || batch * m * n * k < kMinWork) return nullptr;
  auto plan = std::make_shared<Plan>();
  plan->op = Plan::Op::matmul;
  auto match = std::make_unique<Match>();
  match->plan = plan;
  match->nodes = {&head};
  match->reads = {an, bn, nullptr, nullptr};
  if (baddbmm) {
    if (alpha != 1) {
      PostOp p;
      p.alg = Eltwise::scale;
      p.alpha = alpha;
      plan->post.push_back(p);
    }
    if (beta == 1) {
      const TensorMeta* self = f32_cpu(head.args()[0].node());
      if (!self || !broadcasts_to(self->sizes, out->sizes)) return nullptr;
      add_binary(*match, head.args()[0].node());
    }
  }
  const Node* cur = &head;
  while (cur->users().size() == 1) {
    const Node* user = cur->users()[0];
    if (user->kind() != graph::NodeKind::call_function || taken.count(user) || excluded.count(user)) break;
    size_t reads = 0;  // the value read twice by its one user (x * x) is not a post-op
    for (const Node* in : user->inputs()) reads += in == cur;
    // baddbmm's self is an addition on its own 3-d output: no view after it
    if (reads != 1 || (baddbmm && name_of(*user) != "aten::mul.Tensor" && name_of(*user) != "aten::mul.Scalar" &&
                       name_of(*user).rfind("aten::div", 0) != 0 && name_of(*user) != "aten::add.Tensor"))
      break;
    if (const Node* clone = absorb_permuted_copy(*match, cur, *user, taken, excluded)) {
      cur = clone;
      continue;
    }
    if (!absorb(*match, cur, *user)) break;
    cur = user;
  }
  // attention's q, k, v read through their strides, once the output's batch dims are known (its view)
  std::vector<const Node*> before;
  if (an != bn) {
    read_head_split(*match, 0, taken, excluded, before);
    read_head_split(*match, 1, taken, excluded, before);
  }
  match->head = before.size();
  match->nodes.insert(match->nodes.begin(), before.begin(), before.end());
  return match;
}

namespace {

// The sizes a matmul step computes in (the batch split into the planned view's dims) and of its value (those
// permuted when a permuted copy was absorbed); false with `why` when the operands do not fit the plan.
struct MatmulShapes {
  std::vector<int64_t> out, value, lead;  // lead: the output's dims before [M, N]
};

bool matmul_shapes(const Plan& plan, const at::Tensor& a_in, const at::Tensor& b_in, MatmulShapes* s,
                   std::string* why) {
  const std::vector<int64_t> a = as_3d(a_in), b = as_3d(b_in);
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1]) {
    *why = "the operands' shapes do not agree";
    return false;
  }
  const int64_t batch = a[0], m = a[1], n = b[2];
  if (a_in.numel() == 0 || b_in.numel() == 0) {
    *why = "an empty operand";
    return false;
  }
  s->out = plan.out_view.empty() ? std::vector<int64_t>{batch, m, n} : plan.out_view;
  const size_t rank = s->out.size();
  if (s->out[rank - 2] != m || s->out[rank - 1] != n || product(s->out, 0, rank - 2) != batch) {
    *why = "the output's view does not split this batch";
    return false;
  }
  s->lead.assign(s->out.begin(), s->out.end() - 2);
  s->value = s->out;
  if (plan.out_perm.empty()) return true;
  if (plan.out_perm.size() != rank) {
    *why = "the planned permutation is not of the output's rank";
    return false;
  }
  for (size_t p = 0; p < rank; ++p) s->value[p] = s->out[static_cast<size_t>(plan.out_perm[p])];
  return true;
}

// The binary post-ops' operands (contiguous), in the plan's order; false with `why` when one does not broadcast.
bool post_op_operands(const Plan& plan, const std::vector<const at::Tensor*>& reads, const std::vector<int64_t>& out,
                      std::vector<at::Tensor>* operands, std::string* why) {
  for (const PostOp& p : plan.post) {
    if (p.kind != PostOp::Kind::binary_add) continue;
    const at::Tensor& t = *reads.at(static_cast<size_t>(p.operand));
    if (!broadcasts_to(t.sizes().vec(), out)) {
      *why = "a post-op operand does not broadcast to the output";
      return false;
    }
    operands->push_back(t.contiguous());
  }
  return true;
}

std::string primitive_key(const Plan& plan, const at::Tensor& a, const at::Tensor& b,
                          const std::vector<at::Tensor>& operands) {
  std::string key = plan.describe();
  append_dims(key, " a", a.sizes());
  append_dims(key, ":", a.strides());
  append_dims(key, " b", b.sizes());
  append_dims(key, ":", b.strides());
  for (const at::Tensor& t : operands) append_dims(key, " o", t.sizes());
  return key;
}

// The destination's strides: the value contiguous, seen through the permutation as the output's dims.
memory::desc destination_md(const Plan& plan, const MatmulShapes& s) {
  const size_t rank = s.out.size();
  memory::dims contiguous(rank, 1), strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) contiguous[d - 1] = contiguous[d] * s.value[d];
  for (size_t p = 0; p < rank; ++p) strides[plan.out_perm.empty() ? p : static_cast<size_t>(plan.out_perm[p])] = contiguous[p];
  return memory::desc(memory::dims(s.out.begin(), s.out.end()), dt::f32, strides);
}

// Tries the primitive with the operands' descriptors in `c` (broadcast as they are, or expanded to the output's
// sizes when `full`); sets `c->refused` when oneDNN does not take it or has only its reference implementation.
void try_primitive(CachedMatmul* c, const Plan& plan, const std::vector<at::Tensor>& operands,
                   const std::vector<int64_t>& out, bool full) {
  const size_t rank = out.size();
  c->refused.clear();
  c->operands.clear();
  c->full_operands = full;
  try {
    dnnl::post_ops po;
    size_t next = 0;
    for (const PostOp& p : plan.post) {
      if (p.kind == PostOp::Kind::binary_add) {
        const at::Tensor& t = operands.at(next++);
        c->operands.push_back(full ? post_op_operand_md(at::empty(out, t.options()), rank)
                                   : post_op_operand_md(t, rank));
        po.append_binary(dnnl::algorithm::binary_add, c->operands.back());
      } else {
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, static_cast<float>(p.alpha), 0.f);
      }
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    dnnl::matmul::desc d(c->src, c->weights, c->dst);
    c->pd = dnnl::matmul::primitive_desc(d, attr, engine());
    const std::string impl = c->pd.impl_info_str();
    // oneDNN's reference implementation is far slower than ATen's bmm
    if (impl.rfind("ref", 0) == 0) c->refused = "oneDNN has only its reference implementation (" + impl + ")";
    else c->prim = dnnl::matmul(c->pd);
  } catch (const dnnl::error& e) {
    c->refused = std::string("oneDNN: ") + e.what();
  }
}

// The cached primitive for this plan and these operands, made (and cached, refusals too) on a miss.
std::shared_ptr<CachedMatmul> find_or_create(const Plan& plan, const at::Tensor& a, const at::Tensor& b,
                                             const std::vector<at::Tensor>& operands, const MatmulShapes& s) {
  const std::string key = primitive_key(plan, a, b, operands);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto it = g_cache.find(key); it != g_cache.end()) return it->second;
  }
  auto c = std::make_shared<CachedMatmul>();
  c->src = operand_md(a, s.lead);
  c->weights = operand_md(b, s.lead);
  c->dst = destination_md(plan, s);
  // where oneDNN has only its reference implementation for an operand's broadcast (a causal mask [1, 1, T, T]),
  // the operands expanded to the output's sizes
  try_primitive(c.get(), plan, operands, s.out, false);
  if (!c->refused.empty() && !operands.empty()) try_primitive(c.get(), plan, operands, s.out, true);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_cache.size() >= kCapacity) g_cache.clear();
  g_cache[key] = c;
  ++g_stats.primitives_created;
  return c;
}

void execute(const CachedMatmul& prim, const Plan& plan, const at::Tensor& a, const at::Tensor& b,
             const std::vector<at::Tensor>& operands, at::Tensor& dst) {
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(prim.src, engine(), a.data_ptr())},
                                          {DNNL_ARG_WEIGHTS, memory(prim.weights, engine(), b.data_ptr())},
                                          {DNNL_ARG_DST, memory(prim.dst, engine(), dst.data_ptr())}};
  size_t next = 0;
  for (size_t index = 0; index < plan.post.size(); ++index) {
    if (plan.post[index].kind != PostOp::Kind::binary_add) continue;
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(index)) | DNNL_ARG_SRC_1,
                 memory(prim.operands.at(next), engine(), operands.at(next).data_ptr()));
    ++next;
  }
  dnnl::stream stream(engine());
  prim.prim.execute(stream, args);
  stream.wait();
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.steps_run;
  g_stats.last_impl = prim.pd.impl_info_str();
}

// `dst` with eager's strides (dims of size 1 aside): itself, or a copy laid out as eager's.
at::Tensor with_eager_strides(const at::Tensor& dst, const std::vector<int64_t>& value_sizes,
                              const graph::TensorMeta& eager) {
  bool same = true;
  for (size_t d = 0; d < value_sizes.size() && eager.sizes == value_sizes; ++d)
    same = same && (value_sizes[d] == 1 || dst.stride(static_cast<int64_t>(d)) == eager.strides[d]);
  if (same) return dst;
  at::Tensor relaid = at::empty_strided(eager.sizes, eager.strides, dst.options());
  relaid.copy_(dst);
  return relaid;
}

// The tensor the step reads for operand a or b: bmm's own (3-d), or for a head split (Plan::a_view, b_view) its
// source when it has the rank and leading sizes of the output's view (read through its strides), else the copy
// the clone would have made, viewed as bmm's operand; undefined when the source cannot give that view.
at::Tensor split_operand(const Plan& plan, const std::vector<int64_t>& view, const at::Tensor& t) {
  if (view.empty()) return t;
  const std::vector<int64_t>& out = plan.out_view;
  const int64_t r = t.dim();
  if (r == static_cast<int64_t>(out.size()) && r >= 3 && view.size() == 3 &&
      std::equal(out.begin(), out.end() - 2, t.sizes().begin()) && t.size(r - 2) == view[1] &&
      t.size(r - 1) == view[2])
    return t;
  if (t.numel() != product(view, 0, view.size())) return at::Tensor();
  return t.contiguous().view(view);
}

}  // namespace

std::optional<at::Tensor> run_matmul(const Plan& plan, const std::vector<const at::Tensor*>& reads,
                                     const graph::TensorMeta& eager, std::string* why) {
  at::Tensor a = split_operand(plan, plan.a_view, *reads.at(0)), b = split_operand(plan, plan.b_view, *reads.at(1));
  if (!a.defined() || !b.defined()) {
    *why = "a head split's source does not give the planned view";
    return std::nullopt;
  }
  MatmulShapes shapes;
  if (!matmul_shapes(plan, a, b, &shapes, why)) return std::nullopt;
  a = readable(a);
  b = readable(b);
  std::vector<at::Tensor> operands;
  if (!post_op_operands(plan, reads, shapes.out, &operands, why)) return std::nullopt;
  std::shared_ptr<CachedMatmul> prim = find_or_create(plan, a, b, operands, shapes);
  if (!prim->refused.empty() && (!a.is_contiguous() || !b.is_contiguous())) {
    // strides oneDNN has only its reference implementation for: the operands copied dense, inside the step
    a = a.contiguous();
    b = b.contiguous();
    prim = find_or_create(plan, a, b, operands, shapes);
  }
  if (!prim->refused.empty()) {
    *why = prim->refused;
    return std::nullopt;
  }
  if (prim->full_operands)
    for (at::Tensor& t : operands) t = t.expand(shapes.out).contiguous();
  at::Tensor dst = recycled_empty(shapes.value, a.options());
  execute(*prim, plan, a, b, operands, dst);
  return with_eager_strides(dst, shapes.value, eager);
}

MatmulStats matmul_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}

void matmul_reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_cache.clear();
  g_stats = MatmulStats{};
}

}  // namespace tj::jit::onednn
