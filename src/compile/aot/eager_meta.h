// Eager layouts for AOT capture (internal to src/graph/aot).
//
// Functionalization replaces every in-place op by its out-of-place form,
// whose result may be laid out differently from the tensor eager writes
// (`lerp_` on a transposed view: the functional `lerp` is contiguous; a
// `*_scatter` of an expanded base: a contiguous clone), and reads a view's
// dtype, strides and offset off the functional value it ends with. What the
// caller must get back is eager's metadata, so capture also runs the
// captured graph once with eager's semantics on meta tensors: one meta
// storage per storage of the example inputs (inputs that share memory share
// it), views alias, in-place ops keep their target's layout and metadata
// mutations (`t_`, `transpose_`) move it. The result gives, per input and
// per output, eager's sizes, strides, storage offset and dtype, and the
// first tensor made on each storage (the layout eager allocated). It also
// finds writes functionalization gets wrong (a result sharing an
// argument's storage counts as its view, whatever the schema says): a write through a view that
// overlaps itself (an `expand`, an overlapping `unfold`), which its reverse
// view functions turn into a sum of the broadcast copies; a write through a
// view of another dtype (`x.view(torch.int64).clamp_(0)`), whose new value
// LibTorch 1.13 hands the base in the view's dtype; and an in-place op that
// reads, through another view, memory it writes.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph::aot::detail {

struct EagerMeta {
  std::vector<at::Tensor> inputs;   // per captured position: the meta input after the run
  std::vector<int64_t> offsets;     // per captured position: its storage offset before the run
  std::vector<at::Tensor> outputs;  // the graph's tensor outputs, flattened
  std::map<const c10::StorageImpl*, at::Tensor> roots;  // storage -> the first tensor made on it (or its base)
  std::map<std::string, at::Tensor> attrs;              // get_attr target -> its meta tensor
  std::string unsupported;  // non-empty: a write functionalization cannot reproduce (why)
  // Nodes whose one tensor result shares no memory with their tensor
  // arguments (`b.contiguous()` of a non-contiguous b): where the functional
  // op returns its argument itself, capture makes it a copy right there, so
  // later in-place ops on the argument do not reach it.
  std::set<const Node*> fresh_results;

  // The first tensor made on `t`'s storage (undefined for an input's storage).
  at::Tensor root_of(const at::Tensor& t) const;
};

// Runs `graph` on meta tensors shaped like `examples` (one per placeholder),
// each node in its grad mode (its `grad_enabled` tag, else `grad_enabled`),
// so views carry the autograd creation meta eager's would (a view made by
// `unbind` or in no-grad mode refuses in-place ops).
Expected<EagerMeta> run_eager_meta(const Graph& graph, c10::ArrayRef<at::Tensor> examples, bool grad_enabled);

// True when an op writing `written` while reading `read` reads memory it
// writes, other than element by element the same (`x.add_(x)`): eager's
// result then depends on the order its kernel visits the elements, which
// the functional op cannot reproduce.
bool reads_what_it_writes(const at::Tensor& written, const at::Tensor& read);

// True when some element of `t` may be reached by two indices (a zero
// stride over a dimension longer than 1, or dimensions whose strides
// interleave).
bool may_overlap(const at::Tensor& t);

}  // namespace tj::graph::aot::detail
