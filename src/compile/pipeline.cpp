// The compile pipeline; see pipeline.h. `compile_graph` is the list of
// steps; each step is a member of `Steps` below it, which keeps what the
// steps share (the request, the hooks, the first failure).
#include "compile/pipeline.h"

#include <chrono>
#include <exception>

#include "compile/graph_cache.h"
#include "graph/boxing.h"
#include "graph/lint.h"
#include "graph/passes/constant_fold.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/decompose.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"
#include "support/internal_error.h"
#include "support/log.h"

namespace tj::compile {

namespace {

class Steps {
 public:
  // `log`: the steps log their graphs; `context`: where an internal error
  // is reported (by default the frame and the backend, or the frame alone
  // from a template).
  Steps(const Request& request, const Hooks& hooks, bool log = true, std::string context = "")
      : r_(request),
        hooks_(hooks),
        backend_(recording(*request.backend, hooks)),
        log_(log),
        context_(!context.empty()          ? std::move(context)
                 : request.aot_template ? request.where
                                        : "compiling " + request.where + " (" + request.backend->name + ")") {}

  // Step: the size nodes' values as constants (graph/sym_ints.h).
  std::optional<std::shared_ptr<const graph::Graph>> fold_sizes(std::shared_ptr<const graph::Graph> g) {
    step_ = Step::fold_sizes;
    auto folded = compile::fold_sizes(g);
    if (!folded) {
      context_ = "folding sizes of " + r_.where;
      return fail(Blame::sizes, folded.error());
    }
    folded_ = *folded;
    if (log_ && *folded != g)
      TJ_LOG(aot_graphs, "graph for {} with its size nodes folded:\n{}", r_.where, graph::print_graph(**folded));
    return *folded;
  }

  // A backend that is not functional compiles the captured graph as it is.
  Result compile_as_captured(std::shared_ptr<const graph::Graph> g) {
    step_ = Step::backend_compile;
    if (r_.aot_template) return fail_result(Blame::backend, Error{"the backend does not run AOT"});
    std::vector<graph::TensorMeta> metas;
    for (const at::Tensor& t : r_.example_inputs) metas.push_back(graph::TensorMeta::of(t));
    auto fn = r_.backend->compile(std::move(g), metas);
    if (!fn) return fail_result(Blame::backend, fn.error());
    Result out;
    out.compiled = Compiled{std::move(*fn)};
    out.folded = folded_;
    return out;
  }

  // Step: refuse what AOT cannot represent; unused results made extra
  // outputs (aot/boundary.h). From a template, the boundary must be the one
  // around its first capture.
  std::optional<AotBoundary> aot_boundary(std::shared_ptr<const graph::Graph> g) {
    step_ = Step::aot_boundary;
    if (std::string why = aot_cannot_represent(*g); !why.empty()) return fail(Blame::aot, Error{"AOT: " + why});
    AotBoundary boundary = prepare_for_aot(std::move(g));
    if (const AotBoundary* first = r_.template_boundary;
        r_.aot_template && first && (boundary.extra_outputs != first->extra_outputs || boundary.fixes != first->fixes))
      return fail(Blame::aot, Error{"the outputs AOT's boundary adds or fixes differ"});
    return boundary;
  }

  // Step: AOT's capture on proxy tensors, or the size template specialized.
  std::optional<jit::AotCaptured> capture(const AotBoundary& boundary, bool from_template) {
    step_ = Step::capture;
    captured_ = !from_template;
    if (interrupted()) return std::nullopt;
    const jit::AotOptions options = aot_options(boundary);
    auto c = from_template ? jit::aot_capture_from_template(*r_.aot_template, boundary.graph, r_.example_inputs, options)
                           : jit::aot_capture(boundary.graph, r_.example_inputs, options);
    if (!c) return fail(Blame::aot, c.error());
    if (log_ && c->joint) TJ_LOG(aot_graphs, "AOT joint graph for {}{}:\n{}", r_.where, of_template(*c),
                                 graph::print_graph(*c->graph));
    return std::move(*c);
  }

  // Step "graph cache": AOT's result for this graph and these inputs read
  // back from disk (graph_cache.h) in place of capture, partition and
  // passes; nullopt on a miss. Not for a size template's compiles.
  std::optional<graph_cache::Entry> from_graph_cache(const AotBoundary& boundary) {
    step_ = Step::capture;
    if (r_.aot_template || !graph_cache::enabled()) return std::nullopt;
    const jit::AotOptions options = aot_options(boundary);
    std::optional<graph_cache::Entry> e;
    const auto started = std::chrono::steady_clock::now();
    try {  // the cache is an optimization: whatever goes wrong in it is a miss
      cache_key_ = graph_cache::key_of(*boundary.graph, r_.example_inputs, *r_.backend, options);
      e = graph_cache::load(cache_key_, boundary.graph, r_.example_inputs, options);
    } catch (const std::exception& ex) {
      TJ_LOG(perf, "graph cache: not used for {}: {}", r_.where, graph::detail::short_message(ex));
      cache_key_.clear();
    }
    if (!e) return std::nullopt;
    from_cache_ = true;
    partition_note_ = e->graphs.note;
    TJ_LOG(perf, "graph cache: AOT's graphs for {} read from {} in {:.2f} ms", r_.where,
           graph_cache::entry_path(cache_key_),
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    if (log_ && log::enabled(log::Topic::aot_graphs)) {
      TJ_LOG(aot_graphs, "AOT forward graph for {} (from the graph cache):\n{}", r_.where,
             graph::print_graph(*e->graphs.forward));
      if (e->graphs.backward)
        TJ_LOG(aot_graphs, "AOT backward graph for {} (from the graph cache):\n{}", r_.where,
               graph::print_graph(*e->graphs.backward));
    }
    return e;
  }

  // After a capture's backend compile: its result kept for the next process.
  void to_graph_cache(const jit::AotCaptured& c, const jit::AotPartitioned& graphs) {
    if (cache_key_.empty() || c.from_template) return;
    try {
      graph_cache::store(cache_key_, c, graphs);
    } catch (const std::exception& ex) {
      TJ_LOG(perf, "graph cache: not stored for {}: {}", r_.where, graph::detail::short_message(ex));
    }
  }

  // Step: the joint graph split into the forward and the backward.
  std::optional<jit::AotPartitioned> partition(const jit::AotCaptured& c) {
    step_ = Step::partition;
    if (!c.graph) return jit::AotPartitioned{};  // the template's programs serve: nothing to compile
    auto part = jit::aot_partition(c, *r_.backend);
    if (!part) return fail(Blame::aot, part.error());
    if (log_ && log::enabled(log::Topic::aot_graphs)) {
      TJ_LOG(aot_graphs, "AOT forward graph for {}{}:\n{}", r_.where, of_template(c), graph::print_graph(*part->forward));
      if (part->backward)
        TJ_LOG(aot_graphs, "AOT backward graph for {}{}:\n{}", r_.where, of_template(c),
               graph::print_graph(*part->backward));
      if (!c.from_template) TJ_LOG(aot_graphs, "AOT metadata for {}:\n{}", r_.where, c.summary + part->note);
    }
    partition_note_ = part->note;
    return std::move(*part);
  }

  // Step: the passes every functional graph gets before a backend sees it.
  // They only ever see AOT's functional graphs: the captured graph may
  // mutate its inputs, which these passes do not model.
  std::optional<jit::AotPartitioned> passes(const jit::AotCaptured& c, jit::AotPartitioned graphs) {
    step_ = Step::passes;
    if (c.one_program) return graphs;  // nothing to compile
    if (interrupted()) return std::nullopt;
    for (auto [g, which] : {std::pair{&graphs.forward, "forward"}, std::pair{&graphs.backward, "backward"}}) {
      if (!*g) continue;
      std::shared_ptr<graph::Graph> optimized = (*g)->clone();
      if (auto st = run_passes(*optimized); !st)
        return fail(Blame::backend, Error{"backend " + r_.backend->name + " (" + which + "): " + st.error().message,
                                          st.error().kind});
      *g = std::move(optimized);
    }
    if (interrupted()) return std::nullopt;
    for (const auto& g : {graphs.forward, graphs.backward})
      if (g) TJ_LOG(output_code, "graph handed to the backend for {}:\n{}", r_.where, graph::print_graph(*g));
    return graphs;
  }

  // Step: each functional graph compiled by the backend (from a template,
  // through its programs for every size; nothing when they serve).
  std::optional<jit::AotCompiledGraphs> backend_compile(const jit::AotCaptured& c, const jit::AotPartitioned& graphs) {
    step_ = Step::backend_compile;
    if (c.one_program) return jit::AotCompiledGraphs{c.served_forward, c.served_backward};
    auto compiled = jit::aot_compile_graphs(c, graphs.forward, graphs.backward, backend_, r_.where);
    if (!compiled) return fail(Blame::backend, compiled.error());
    return std::move(*compiled);
  }

  // Step (config.debug_check_aot_templates): the template's graphs for
  // these sizes (before the passes) against a capture's, made by the same
  // steps; false when they differ or the capture fails.
  bool check_template(const AotBoundary& boundary, const jit::AotPartitioned& from_template) {
    step_ = Step::check_template;
    Steps capturing(r_, hooks_, /*log=*/false, "checking an AOT size template");
    std::optional<jit::AotPartitioned> graphs;
    try {
      std::optional<jit::AotCaptured> c = capturing.capture(boundary, /*from_template=*/false);
      if (c) graphs = capturing.partition(*c);
      std::optional<jit::AotPartitioned> optimized = graphs ? capturing.passes(*c, *graphs) : std::nullopt;
      if (optimized) (void)capturing.backend_compile(*c, *optimized);
    } catch (const std::exception& e) {
      capturing.fail(Blame::aot, graph::detail::exception_error("", e));
    }
    if (const std::optional<Failure>& f = capturing.failure_) {  // reported already when internal
      fail(Blame::aot, Error{"capturing them fails: " + f->message, f->kind}, /*report=*/false);
      return false;
    }
    jit::AotGraphs a, b;
    a.forward = from_template.forward;
    a.backward = from_template.backward;
    b.forward = graphs->forward;
    b.backward = graphs->backward;
    if (std::string differs = jit::aot_graphs_differ(a, b); !differs.empty()) {
      fail(Blame::aot, Error{differs});
      return false;
    }
    return true;
  }

  // Step: AOT's runtime wrapper, then the outputs eager would give.
  Result runtime_wrapper(const jit::AotCaptured& c, jit::AotCompiledGraphs compiled, const AotBoundary& boundary) {
    step_ = Step::runtime_wrapper;
    Compiled out;
    out.fn = with_eager_outputs(jit::aot_runtime_wrapper(c, std::move(compiled)), boundary);
    out.through_aot = true;
    out.one_program = c.one_program;
    if (!c.from_template) {
      out.aot_summary = c.summary + partition_note_;
      out.aot_point = c.point;
      if (c.point) out.aot_boundary = std::make_shared<const AotBoundary>(boundary);
    }
    Result r;
    r.compiled = std::move(out);
    r.captured = captured_;
    r.from_graph_cache = from_cache_;
    r.folded = folded_;
    return r;
  }

  // An exception out of a step: LibTorch's error, or ours (ErrorKind::internal).
  Result thrown(const std::exception& e) {
    const Blame blame = r_.backend->functional ? Blame::aot : Blame::backend;
    return fail_result(blame, graph::detail::exception_error("", e));
  }

  const std::optional<Failure>& failure() const { return failure_; }

  Result failed() {
    Result r;
    r.failure = *failure_;
    r.captured = captured_;
    r.folded = folded_;
    return r;
  }

 private:
  // A backend whose failures (to compile, or a compiled call that throws)
  // go to hooks.backend_failed with the graph handed to it.
  static jit::Backend recording(const jit::Backend& backend, const Hooks& hooks) {
    if (!hooks.backend_failed) return backend;
    using Fn = Expected<jit::CompiledFn>;
    auto watch = [record = hooks.backend_failed](const std::shared_ptr<const graph::Graph>& g,
                                                 const std::vector<graph::TensorMeta>& inputs, Fn fn) -> Fn {
      if (!fn) {
        record(g, inputs, fn.error().message);
        return fn;
      }
      return jit::CompiledFn([g, record, fn = std::move(*fn)](c10::ArrayRef<at::Tensor> in) {
        try {
          return fn(in);
        } catch (const std::exception& e) {
          std::vector<graph::TensorMeta> metas;
          for (const at::Tensor& t : in) metas.push_back(graph::TensorMeta::of(t));
          record(g, std::move(metas), graph::detail::short_message(e));
          throw;
        }
      });
    };
    jit::Backend out = backend;
    out.compile = [inner = backend.compile, watch](std::shared_ptr<const graph::Graph> g,
                                                   const std::vector<graph::TensorMeta>& inputs) {
      return watch(g, inputs, inner(g, inputs));
    };
    if (backend.compile_point)
      out.compile_point = [inner = backend.compile_point, watch](std::shared_ptr<const graph::Graph> g,
                                                                 const std::vector<graph::TensorMeta>& inputs,
                                                                 jit::Backend::SizePoint* point) {
        return watch(g, inputs, inner(g, inputs, point));
      };
    return out;
  }

  Status run_passes(graph::Graph& g) const {
    graph::LintAtEnd lint(g, "the backend passes (decompose_for_fusion, eliminate_dead_code, fold_constants, "
                             "eliminate_common_subexpressions, eliminate_dead_code)");
    if (r_.backend->fuses_pointwise)
      if (auto decomposed = graph::decompose_for_fusion(g); !decomposed) return decomposed.error();
    graph::eliminate_dead_code(g);
    auto folded = graph::fold_constants(g);
    if (!folded) return folded.error();
    graph::eliminate_common_subexpressions(g);
    graph::eliminate_dead_code(g);
    lint.finish();
    return ok_status();
  }

  jit::AotOptions aot_options(const AotBoundary& boundary) const {
    jit::AotOptions options;
    options.grad_enabled = r_.grad_enabled;
    options.specialize_graphs = r_.check_template;
    options.where = r_.where;
    options.undifferentiated_outputs = boundary.extra_outputs;
    return options;
  }

  bool interrupted() {
    if (!hooks_.interrupted || !hooks_.interrupted()) return false;
    failure_ = Failure{step_, Blame::backend, "interrupted", ErrorKind::unsupported};
    return true;
  }

  // Records the step's failure (the first one only; an internal error
  // reported unless `report` is false); always nullopt.
  std::nullopt_t fail(Blame blame, const Error& e, bool report = true) {
    if (!failure_)
      failure_ = Failure{step_, blame,
                         report && e.kind == ErrorKind::internal ? report_internal_error(context_, e.message) : e.message,
                         e.kind};
    return std::nullopt;
  }
  Result fail_result(Blame blame, const Error& e) {
    fail(blame, e);
    return failed();
  }

  static const char* of_template(const jit::AotCaptured& c) {
    return c.from_template ? " (the size template, specialized)" : "";
  }

  const Request& r_;
  const Hooks& hooks_;
  jit::Backend backend_;  // the request's, its failures recorded
  bool log_;
  std::string context_;
  std::string partition_note_;
  std::shared_ptr<const graph::Graph> folded_;
  Step step_ = Step::fold_sizes;
  std::optional<Failure> failure_;
  bool captured_ = false;
  bool from_cache_ = false;
  std::string cache_key_;  // "" when the graph cache is not asked
};

}  // namespace

const char* step_name(Step step) {
  switch (step) {
    case Step::fold_sizes: return "fold sizes";
    case Step::aot_boundary: return "AOT boundary";
    case Step::capture: return "capture";
    case Step::partition: return "partition";
    case Step::passes: return "passes";
    case Step::backend_compile: return "backend compile";
    case Step::runtime_wrapper: return "runtime wrapper";
    case Step::check_template: return "check template";
  }
  return "?";
}

Expected<std::shared_ptr<const graph::Graph>> fold_sizes(std::shared_ptr<const graph::Graph> graph) {
  if (!graph::has_sym_nodes(*graph)) return graph;
  std::shared_ptr<graph::Graph> folded = graph->clone();
  if (auto st = graph::fold_sym_nodes(*folded); !st) return st.error();
  return std::shared_ptr<const graph::Graph>(std::move(folded));
}

Result compile_graph(const Request& request, const Hooks& hooks) {
  Steps s(request, hooks);
  try {
    auto graph = s.fold_sizes(request.graph);
    if (!graph) return s.failed();
    if (!request.backend->functional) return s.compile_as_captured(std::move(*graph));
    auto boundary = s.aot_boundary(std::move(*graph));
    if (!boundary) return s.failed();
    if (auto cached = s.from_graph_cache(*boundary)) {
      auto compiled = s.backend_compile(cached->captured, cached->graphs);
      if (!compiled) return s.failed();
      return s.runtime_wrapper(cached->captured, std::move(*compiled), *boundary);
    }
    auto captured = s.capture(*boundary, /*from_template=*/request.aot_template != nullptr);
    if (!captured) return s.failed();
    auto graphs = s.partition(*captured);
    if (!graphs) return s.failed();
    auto optimized = s.passes(*captured, *graphs);
    if (!optimized) return s.failed();
    auto compiled = s.backend_compile(*captured, *optimized);
    if (!compiled) return s.failed();
    if (request.aot_template && request.check_template && !s.check_template(*boundary, *graphs)) return s.failed();
    s.to_graph_cache(*captured, *optimized);
    return s.runtime_wrapper(*captured, std::move(*compiled), *boundary);
  } catch (const std::exception& e) {
    return s.thrown(e);
  }
}

Expected<Probe> capture_probe(const Request& request, const Hooks& hooks) {
  if (!request.backend->functional || request.aot_template) return Error{"a probe needs a functional backend"};
  Steps s(request, hooks, /*log=*/false, "probing sizes of " + request.where);
  try {
    auto graph = s.fold_sizes(request.graph);
    std::optional<AotBoundary> boundary = graph ? s.aot_boundary(std::move(*graph)) : std::nullopt;
    std::optional<jit::AotCaptured> c = boundary ? s.capture(*boundary, /*from_template=*/false) : std::nullopt;
    if (!c) return Error{s.failure() ? s.failure()->message : "the capture failed"};
    if (!c->point) return Error{"the capture keeps no point (with grad, it records no backward)"};
    return Probe{c->point, std::make_shared<const AotBoundary>(*boundary)};
  } catch (const std::exception& e) {
    return Error{graph::detail::short_message(e)};
  }
}

}  // namespace tj::compile
