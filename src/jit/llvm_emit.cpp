// Loop IR -> LLVM IR; see llvm_emit.h.
//
// Each kernel module holds an internal body function whose buffer pointers
// are `noalias` arguments (outputs are fresh tensors, inputs are only read),
// and one entry point that loads those pointers from the `ptrs` array and
// calls it: `<name>_flat` (one loop over n elements) when the kernel has one
// (loop::has_flat_entry), else `<name>_strided` (a loop nest over the rank,
// each buffer with its run-time strides in elements), which a kernel with a
// flat entry gets in a module of its own when a call first needs it. After
// inlining the noalias arguments become alias scopes, which is what lets
// the vectorizer work without run-time overlap checks. What an op means
// (its NaN rule, which extreme it picks, a reduction's start value and
// fold) is read from the op table (loop_ops.h), which the CUDA renderer
// reads too; llvm_codegen.cpp checks each kernel against it (loop::verify)
// before emitting.
#include "jit/llvm_emit.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <c10/util/BFloat16.h>

#include "jit/llvm_compat.h"
#include "jit/llvm_math.h"
#include "jit/llvm_passes.h"
#include "jit/llvm_reduce.h"

namespace tj::jit {

namespace {

using c10::ScalarType;
using loop::Expr;
using loop::Op;

// Builds the LLVM IR of one kernel.
class Emitter {
 public:
  Emitter(const loop::Kernel& k, llvm::LLVMContext& ctx, llvm::Module& m, const EmitTarget& j)
      : k_(k),
        calls_libmvec_(calls_libmvec(k)),
        schedule_(loop::schedule(k)),
        ctx_(ctx),
        m_(m),
        jit_(j),
        b_(ctx) {}

  // One entry point, `<name>_flat` or `<name>_strided`.
  void emit(const std::string& name, bool flat) { emit_entry(name + (flat ? "_flat" : "_strided"), flat); }

 private:
  int num_buffers() const { return static_cast<int>(k_.outputs.size() + k_.inputs.size()); }
  llvm::Type* i64() { return b_.getInt64Ty(); }
  llvm::Type* ptr() { return llvm::PointerType::getUnqual(ctx_); }

  llvm::Type* reg_type(ScalarType t) { return tj::jit::reg_type(b_, t); }
  llvm::Type* mem_type(ScalarType t) { return t == ScalarType::Bool ? b_.getInt8Ty() : reg_type(t); }
  static bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }

  void set_attributes(llvm::Function* f) {
    f->addFnAttr("target-cpu", jit_.cpu);
    f->addFnAttr("target-features", jit_.features);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    // LLVM tunes recent Intel CPUs to 256-bit vectors (the clock penalty of
    // older parts); measured on Sapphire Rapids, 512-bit vectors make
    // compute-bound kernels (exp, sin, softmax) 1.3-1.5x faster and cost
    // memory-bound ones nothing (docs/benchmarks.md).
    if (jit_.avx512f) f->addFnAttr("prefer-vector-width", "512");
  }

  // An entry point: loads the buffer pointers and runs the loop nest.
  void emit_entry(const std::string& name, bool flat) {
    std::vector<llvm::Type*> params = {ptr()};
    if (flat) {
      params.push_back(i64());
      params.push_back(i64());
    } else {
      params.push_back(ptr());
      params.push_back(ptr());
    }
    auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    auto* entry = llvm::Function::Create(entry_ty, llvm::Function::ExternalLinkage, name, m_);
    set_attributes(entry);

    // the body, with noalias buffer pointers, inlined into the entry
    std::vector<llvm::Type*> body_params(num_buffers(), ptr());
    for (size_t i = 1; i < params.size(); ++i) body_params.push_back(params[i]);
    auto* body_ty = llvm::FunctionType::get(b_.getVoidTy(), body_params, false);
    auto* body = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, name + "_body", m_);
    set_attributes(body);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    for (int i = 0; i < num_buffers(); ++i) {
      body->addParamAttr(i, llvm::Attribute::NoAlias);
      body->addParamAttr(i, llvm::Attribute::NoCapture);
    }
    emit_body(body, flat);

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> args;
    for (int i = 0; i < num_buffers(); ++i)
      args.push_back(b_.CreateLoad(ptr(), b_.CreateConstInBoundsGEP1_64(ptr(), entry->getArg(0), i)));
    for (size_t i = 1; i < params.size(); ++i) args.push_back(entry->getArg(static_cast<unsigned>(i)));
    b_.CreateCall(body, args);
    b_.CreateRetVoid();
  }

  // for (i = 0; i < n; ++i) body(i), rotated with a guard (the vectorizer's shape)
  void emit_loop(llvm::Value* n, const std::function<void(llvm::Value*)>& body) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, "loop", f);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", f);
    b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), loop, exit);
    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(i64(), 2, "i");
    i->addIncoming(b_.getInt64(0), pre);
    body(i);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
    const bool innermost = b_.GetInsertBlock() == loop;
    i->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* latch = b_.CreateCondBr(b_.CreateICmpSLT(next, n), loop, exit);
    if (innermost) {
      std::vector<llvm::Metadata*> ops = {nullptr};
      // A loop of vector-library calls is latency-bound (each call clobbers
      // every vector register): interleaving keeps several calls in flight.
      if (calls_libmvec_) {
        llvm::Metadata* count[] = {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                                   llvm::ConstantAsMetadata::get(b_.getInt32(kLibmvecInterleave))};
        ops.push_back(llvm::MDNode::get(ctx_, count));
      }
      if (loop_tag_) ops.push_back(std::exchange(loop_tag_, nullptr));
      if (scalar_loops_) {  // see emit_by_inner_stride
        llvm::Metadata* off[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                 llvm::ConstantAsMetadata::get(b_.getFalse())};
        ops.push_back(llvm::MDNode::get(ctx_, off));
      }
      if (ops.size() > 1) {
        llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
        md->replaceOperandWith(0, md);
        latch->setMetadata(llvm::LLVMContext::MD_loop, md);
      }
    }
    b_.SetInsertPoint(exit);
  }

  // Emits the inner loop nest of one row: `body` gets each buffer's offset
  // and the row-major index of the element within its row; the innermost
  // dimension runs in blocks of kSumBlock elements, `begin_block` and
  // `end_block` around each (see Accumulator).
  using InnerBody = std::function<void(const std::vector<llvm::Value*>& offsets, llvm::Value* index)>;
  struct InnerHooks {
    InnerBody body;
    std::function<void()> begin_block, end_block;
    bool float_sums = false;  // the loop folds a float32 sum (emit_by_inner_stride)
  };
  using InnerNest = std::function<void(const InnerHooks&)>;
  static constexpr int64_t kSumBlock = 2048;

  // for (i = 0; i < n; ++i) in blocks: `body(i)` between the hooks of each block
  void emit_blocked_loop(llvm::Value* n, const InnerHooks& hooks, const std::function<void(llvm::Value*)>& body) {
    llvm::Value* blocks = b_.CreateUDiv(b_.CreateAdd(n, b_.getInt64(kSumBlock - 1)), b_.getInt64(kSumBlock));
    emit_loop(blocks, [&](llvm::Value* block) {
      llvm::Value* first = b_.CreateMul(block, b_.getInt64(kSumBlock), "", true, true);
      llvm::Value* rest = b_.CreateSub(n, first);
      llvm::Value* len = b_.CreateSelect(b_.CreateICmpSLT(rest, b_.getInt64(kSumBlock)), rest, b_.getInt64(kSumBlock));
      hooks.begin_block();
      emit_loop(len, [&](llvm::Value* i) { body(b_.CreateAdd(first, i, "", true, true)); });
      hooks.end_block();
    });
  }

  // A loop nest's innermost dim `d` of a loop folding a float32 sum,
  // emitted twice: where every buffer the inner loops read or write steps
  // by one element along it, with those strides 1 (a unit-stride loop the
  // vectorizer handles, float32 sum blocks); else with wide sum blocks, a
  // loop the vectorizer would leave scalar (its runtime checks want unit
  // strides: see llvm_reduce.h), marked so that it does not try (the
  // second copy costs little compile time).
  void emit_by_inner_stride(std::vector<std::vector<llvm::Value*>>& stride, int d, const std::function<void()>& emit) {
    const int num_out = static_cast<int>(k_.outputs.size());
    std::vector<int> inner;
    for (int b = 0; b < num_buffers(); ++b)
      if (b < num_out ? k_.outputs[b].full : k_.inputs[b - num_out].inner) inner.push_back(b);
    llvm::Value* unit = b_.getTrue();
    for (int b : inner) unit = b_.CreateAnd(unit, b_.CreateICmpEQ(stride[b][d], b_.getInt64(1)));
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* unit_block = llvm::BasicBlock::Create(ctx_, "unit_stride", f);
    auto* strided_block = llvm::BasicBlock::Create(ctx_, "strided", f);
    auto* join = llvm::BasicBlock::Create(ctx_, "inner_done", f);
    b_.CreateCondBr(unit, unit_block, strided_block);
    b_.SetInsertPoint(unit_block);
    std::vector<llvm::Value*> saved;
    for (int b : inner) saved.push_back(std::exchange(stride[b][d], b_.getInt64(1)));
    emit();
    b_.CreateBr(join);
    for (size_t i = 0; i < inner.size(); ++i) stride[inner[i]][d] = saved[i];
    b_.SetInsertPoint(strided_block);
    reducer_.set_wide_blocks(true);
    scalar_loops_ = true;
    emit();
    scalar_loops_ = false;
    reducer_.set_wide_blocks(false);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  // A loop of a flat entry asks for memory ahead of its reads and writes,
  // once vectorized (llvm_passes.h, kPrefetchAhead): a reduction's first
  // inner loop reads its row-major inputs from memory (the loops after it
  // find the row in cache) and asks for the next row; the inner loop that
  // writes its row-major outputs asks for the next row of those; a
  // pointwise kernel's one loop asks for what lies 2 KiB ahead in every
  // buffer it streams through.
  llvm::MDNode* prefetch_tag(PrefetchDistance distance, bool inputs, const std::vector<int>& stored_outputs) {
    std::vector<llvm::Metadata*> ops = {llvm::MDString::get(ctx_, kPrefetchAhead),
                                        llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<int>(distance)))};
    auto add = [&](size_t b) {
      if (layout(static_cast<int>(b)) == loop::Layout::full)
        ops.push_back(llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<int>(b))));
    };
    for (int o : stored_outputs)
      if (k_.outputs[o].layout == loop::Layout::full) add(buffer_of_output(o));
    if (inputs)
      for (size_t b = k_.outputs.size(); b < static_cast<size_t>(num_buffers()); ++b) add(b);
    return ops.size() > 2 ? llvm::MDNode::get(ctx_, ops) : nullptr;
  }

  void emit_body(llvm::Function* f, bool flat) {
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    entry_ = &f->getEntryBlock();
    const int nb = num_buffers();
    const int rank = static_cast<int>(k_.sizes.size());
    const int reduced = k_.reduced_dims;
    std::vector<llvm::Value*> base;
    for (int i = 0; i < nb; ++i) base.push_back(f->getArg(i));
    if (flat) {
      llvm::Value* rows = f->getArg(nb);
      llvm::Value* cols = f->getArg(nb + 1);
      inner_count_ = reduced ? cols : b_.getInt64(1);
      flat_ = true;
      if (!reduced) {
        std::vector<int> outputs(k_.outputs.size());
        for (size_t o = 0; o < outputs.size(); ++o) outputs[o] = static_cast<int>(o);
        loop_tag_ = prefetch_tag(PrefetchDistance::fixed, /*inputs=*/true, outputs);
      }
      emit_loop(rows, [&](llvm::Value* r) {
        llvm::Value* row_start = reduced ? b_.CreateMul(r, cols) : r;
        std::vector<llvm::Value*> row_offsets;
        for (int b = 0; b < nb; ++b) {
          loop::Layout l = layout(b);
          row_offsets.push_back(l == loop::Layout::full ? row_start : l == loop::Layout::row ? r : b_.getInt64(0));
        }
        emit_row(base, row_offsets, [&](const InnerHooks& hooks) {
          emit_blocked_loop(cols, hooks, [&](llvm::Value* j) {
            std::vector<llvm::Value*> offsets;
            for (int b = 0; b < nb; ++b) {
              loop::Layout l = layout(b);
              offsets.push_back(l == loop::Layout::full  ? b_.CreateAdd(row_offsets[b], j, "", true, true)
                                : l == loop::Layout::col ? j
                                                         : row_offsets[b]);
            }
            hooks.body(offsets, j);
          });
        });
      });
    } else {
      llvm::Value* sizes = f->getArg(nb);
      llvm::Value* strides = f->getArg(nb + 1);
      std::vector<llvm::Value*> size(rank);
      std::vector<std::vector<llvm::Value*>> stride(nb, std::vector<llvm::Value*>(rank));
      for (int d = 0; d < rank; ++d) {
        size[d] = b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), sizes, d));
        for (int b = 0; b < nb; ++b)
          stride[b][d] = b_.CreateLoad(i64(), b_.CreateConstInBoundsGEP1_64(i64(), strides, b * rank + d));
      }
      inner_count_ = b_.getInt64(1);
      for (int d = rank - reduced; d < rank; ++d) inner_count_ = b_.CreateMul(inner_count_, size[d]);
      // dims [d, to) as a loop nest; the innermost inner dim in blocks
      std::function<void(int, int, std::vector<llvm::Value*>, llvm::Value*, const InnerHooks&)> nest =
          [&](int d, int to, std::vector<llvm::Value*> offsets, llvm::Value* index, const InnerHooks& leaf) {
            if (d == to) {
              leaf.body(offsets, index);
              return;
            }
            auto step = [&](llvm::Value* i) {
              std::vector<llvm::Value*> inner;
              for (int b = 0; b < nb; ++b) inner.push_back(b_.CreateAdd(offsets[b], b_.CreateMul(i, stride[b][d])));
              nest(d + 1, to, inner, b_.CreateAdd(b_.CreateMul(index, size[d]), i), leaf);
            };
            if (d == rank - 1 && reduced > 0) {
              if (leaf.float_sums) {
                emit_by_inner_stride(stride, d, [&] { emit_blocked_loop(size[d], leaf, step); });
              } else {
                emit_blocked_loop(size[d], leaf, step);
              }
            } else {
              emit_loop(size[d], step);
            }
          };
      InnerHooks row_leaf;
      row_leaf.body = [&](const std::vector<llvm::Value*>& row_offsets, llvm::Value*) {
        emit_row(base, row_offsets,
                 [&](const InnerHooks& hooks) { nest(rank - reduced, rank, row_offsets, b_.getInt64(0), hooks); });
      };
      nest(0, rank - reduced, std::vector<llvm::Value*>(nb, b_.getInt64(0)), b_.getInt64(0), row_leaf);
    }
    b_.CreateRetVoid();
  }

  loop::Layout layout(int buffer) const {
    const int num_out = static_cast<int>(k_.outputs.size());
    return buffer < num_out ? k_.outputs[buffer].layout : k_.inputs[buffer - num_out].layout;
  }

  llvm::Value* load(const Expr& e, const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& offsets) {
    size_t b = k_.outputs.size() + e.input;
    llvm::Value* p = b_.CreateInBoundsGEP(mem_type(e.dtype), base[b], offsets[b]);
    llvm::Value* x = b_.CreateLoad(mem_type(e.dtype), p);
    return e.dtype == ScalarType::Bool ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
  }

  // The buffer an output is stored in: its own, or the input it updates in place.
  size_t buffer_of_output(int output) const {
    const int in = k_.outputs[output].in_place_of;
    return in >= 0 ? k_.outputs.size() + static_cast<size_t>(in) : static_cast<size_t>(output);
  }

  llvm::Value* load_output(int output, const std::vector<llvm::Value*>& base,
                           const std::vector<llvm::Value*>& offsets) {
    ScalarType t = k_.outputs[output].dtype;
    const size_t b = buffer_of_output(output);
    llvm::Value* x = b_.CreateLoad(mem_type(t), b_.CreateInBoundsGEP(mem_type(t), base[b], offsets[b]));
    return t == ScalarType::Bool ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
  }

  void store(int output, llvm::Value* x, const std::vector<llvm::Value*>& base,
             const std::vector<llvm::Value*>& offsets) {
    ScalarType t = k_.outputs[output].dtype;
    if (t == ScalarType::Bool) x = b_.CreateZExt(x, b_.getInt8Ty());
    const size_t b = buffer_of_output(output);
    b_.CreateStore(x, b_.CreateInBoundsGEP(mem_type(t), base[b], offsets[b]));
  }

  // One outer point: the outer expressions as soon as they can be computed,
  // the inner loops of the schedule in between (loop_ir.h).
  void emit_row(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& row_offsets,
                const InnerNest& inner_nest) {
    const loop::Schedule& s = schedule_;
    const size_t n = k_.exprs.size();
    const bool pointwise = k_.reduced_dims == 0;
    std::vector<llvm::Value*> outer(n, nullptr);
    for (int p = 0;; ++p) {
      for (size_t i = 0; i < n; ++i) {
        const Expr& e = k_.exprs[i];
        if (s.inner[i] || loop::is_reduction(e.op) || s.loop[i] != p) continue;
        outer[i] = e.op == Op::load ? load(e, base, row_offsets) : compute(e, outer);
      }
      for (size_t o = 0; o < k_.outputs.size(); ++o)
        if ((pointwise || !k_.outputs[o].full) && s.store_loop[o] == p)
          store(static_cast<int>(o), outer[k_.outputs[o].expr], base, row_offsets);
      if (p == s.loops) break;
      emit_inner_loop(p, base, inner_nest, outer);
    }
  }

  // Inner loop `p` as its plan says (loop_ir.h).
  void emit_inner_loop(int p, const std::vector<llvm::Value*>& base, const InnerNest& inner_nest,
                       std::vector<llvm::Value*>& outer) {
    const loop::Schedule& s = schedule_;
    const loop::LoopPlan& plan = s.plans[p];
    const size_t n = k_.exprs.size();
    std::vector<int> spilled_from(n, -1);  // expr -> the output it is read back from
    for (auto [e, o] : plan.spill_loads) spilled_from[e] = o;
    std::vector<Accumulator> acc;
    for (int r : plan.reductions) acc.push_back(reducer_.start(k_.exprs[r], entry_));
    if (flat_) {
      std::vector<int> stored = plan.stores;
      for (auto [e, o] : plan.spill_stores) stored.push_back(o);
      loop_tag_ = prefetch_tag(PrefetchDistance::next_row, /*inputs=*/p == 0, stored);
    }
    InnerHooks hooks;
    for (int r : plan.reductions)
      hooks.float_sums |= k_.exprs[r].op == Op::reduce_sum && k_.exprs[r].dtype == ScalarType::Float;
    hooks.begin_block = [&] {
      for (size_t r = 0; r < acc.size(); ++r) reducer_.begin_block(k_.exprs[plan.reductions[r]], acc[r]);
    };
    hooks.end_block = [&] {
      for (size_t r = 0; r < acc.size(); ++r) reducer_.end_block(k_.exprs[plan.reductions[r]], acc[r]);
    };
    hooks.body = [&](const std::vector<llvm::Value*>& offsets, llvm::Value* index) {
      std::vector<llvm::Value*> v = outer;
      for (size_t i = 0; i < n; ++i) {
        if (!plan.needed[i] || !s.inner[i]) continue;
        const Expr& e = k_.exprs[i];
        if (spilled_from[i] >= 0) {
          v[i] = load_output(spilled_from[i], base, offsets);
        } else {
          v[i] = e.op == Op::load ? load(e, base, offsets) : compute(e, v);
        }
      }
      for (size_t r = 0; r < plan.reductions.size(); ++r) {
        const Expr& e = k_.exprs[plan.reductions[r]];
        reducer_.accumulate(e, acc[r], v[e.args[0]], index);
      }
      for (auto [e, o] : plan.spill_stores) store(o, v[e], base, offsets);
      for (int o : plan.stores) store(o, v[k_.outputs[o].expr], base, offsets);
    };
    inner_nest(hooks);
    for (size_t r = 0; r < plan.reductions.size(); ++r)
      outer[plan.reductions[r]] = reducer_.finish(k_.exprs[plan.reductions[r]], acc[r]);
  }

  llvm::Value* constant(double value, ScalarType t) {
    if (t == ScalarType::BFloat16) return b_.getInt16(c10::BFloat16(static_cast<float>(value)).x);
    if (is_float(t) || t == ScalarType::Half) return llvm::ConstantFP::get(reg_type(t), value);
    return llvm::ConstantInt::get(reg_type(t), static_cast<uint64_t>(static_cast<int64_t>(value)), true);
  }

  // Half and bfloat16 only ever convert (the lowering computes them in
  // float32): through float32, as c10's conversions do. bfloat16 is kept as
  // its bits: widening shifts them up; narrowing rounds to nearest even
  // (NaN stays a quiet NaN), c10::BFloat16's rule.
  llvm::Value* cast(llvm::Value* x, ScalarType from, ScalarType to) {
    if (from == to) return x;
    if (from == ScalarType::Half) return cast(b_.CreateFPExt(x, b_.getFloatTy()), ScalarType::Float, to);
    if (to == ScalarType::Half) return b_.CreateFPTrunc(cast(x, from, ScalarType::Float), b_.getHalfTy());
    if (from == ScalarType::BFloat16) {
      llvm::Value* bits = b_.CreateShl(b_.CreateZExt(x, b_.getInt32Ty()), 16);
      return cast(b_.CreateBitCast(bits, b_.getFloatTy()), ScalarType::Float, to);
    }
    if (to == ScalarType::BFloat16) {
      llvm::Value* f = cast(x, from, ScalarType::Float);
      llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
      llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
      llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(odd, b_.getInt32(0x7fff))), 16);
      llvm::Value* nan = b_.CreateFCmpUNO(f, f);
      return b_.CreateSelect(nan, b_.getInt16(0x7fc0), b_.CreateTrunc(rounded, b_.getInt16Ty()));
    }
    llvm::Type* t = reg_type(to);
    if (to == ScalarType::Bool)
      return is_float(from) ? b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0))
                            : b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    if (from == ScalarType::Bool) return is_float(to) ? b_.CreateUIToFP(x, t) : b_.CreateZExt(x, t);
    if (is_float(from) && is_float(to)) return b_.CreateFPCast(x, t);
    if (is_float(from)) return b_.CreateFPToSI(x, t);
    if (is_float(to)) return b_.CreateSIToFP(x, t);
    return b_.CreateSExtOrTrunc(x, t);
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
    return b_.CreateUnaryIntrinsic(id, x);
  }

  // A libm call the vectorizer may map to libmvec (tanhf, erff, ...).
  llvm::Value* libm(const char* float_name, const char* double_name, llvm::Value* x) {
    bool f32 = x->getType()->isFloatTy();
    auto callee = m_.getOrInsertFunction(f32 ? float_name : double_name,
                                         llvm::FunctionType::get(x->getType(), {x->getType()}, false));
    auto* fn = llvm::cast<llvm::Function>(callee.getCallee());
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
    llvm::CallInst* call = b_.CreateCall(callee, {x});
    call->setDoesNotAccessMemory();
    return call;
  }

  // float: llvm_math.h. double: tanh(x) = sign(x) * e / (e + 2),
  // e = expm1(2|x|), with |x| clamped where tanh rounds to 1 (20). libmvec's own
  // tanhf takes a scalar slow path for every lane beyond |x| ~ 9, which made
  // chains ending in tanh(exp(...)) compute-bound; expm1 keeps the small-|x|
  // accuracy (no cancellation), NaN passes through the ordered compare.
  llvm::Value* tanh(llvm::Value* x, ScalarType t) {
    if (t == ScalarType::Float) return math::tanhf(b_, x);
    llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* limit = constant(t == ScalarType::Float ? 10.0 : 20.0, t);
    llvm::Value* clamped = b_.CreateSelect(b_.CreateFCmpOGT(ax, limit), limit, ax);
    llvm::Value* e = libm("expm1f", "expm1", b_.CreateFMul(clamped, constant(2, t)));
    llvm::Value* r = b_.CreateFDiv(e, b_.CreateFAdd(e, constant(2, t)));
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  }

  llvm::Value* compute(const Expr& e, const std::vector<llvm::Value*>& v) {
    auto arg = [&](int i) { return v[e.args[i]]; };
    const ScalarType t = e.dtype;
    const bool fp = is_float(t);
    switch (e.op) {
      case Op::load: return nullptr;
      case Op::constant: return constant(e.value, t);
      case Op::inner_count: return cast(inner_count_, ScalarType::Long, t);
      case Op::reduce_sum:
      case Op::reduce_max:
      case Op::reduce_min:
      case Op::reduce_argmax:
      case Op::reduce_argmin: return nullptr;  // emit_inner_loop
      case Op::cast: return cast(arg(0), k_.exprs[e.args[0]].dtype, t);
      case Op::neg: return fp ? b_.CreateFNeg(arg(0)) : b_.CreateNeg(arg(0));
      case Op::abs:
        if (fp) return intrinsic(llvm::Intrinsic::fabs, arg(0));
        return b_.CreateSelect(b_.CreateICmpSLT(arg(0), constant(0, t)), b_.CreateNeg(arg(0)), arg(0));
      case Op::relu: {
        llvm::Value* neg = fp ? b_.CreateFCmpOLT(arg(0), constant(0, t)) : b_.CreateICmpSLT(arg(0), constant(0, t));
        llvm::Value* r = b_.CreateSelect(neg, constant(0, t), arg(0));
        if (k_.relu_plus_one) r = fp ? b_.CreateFAdd(r, constant(1, t)) : b_.CreateAdd(r, constant(1, t));
        return r;
      }
      case Op::sigmoid: {
        if (t == ScalarType::Float) return math::sigmoidf(b_, arg(0));
        llvm::Value* ex = intrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(arg(0)));
        return b_.CreateFDiv(constant(1, t), b_.CreateFAdd(constant(1, t), ex));
      }
      case Op::tanh: return tanh(arg(0), t);
      case Op::erf: return libm("erff", "erf", arg(0));
      case Op::exp:
        if (t != ScalarType::Float) return intrinsic(llvm::Intrinsic::exp, arg(0));
        return loop::is_shifted_by_own_max(k_, e.args[0]) ? math::expf_nonpositive(b_, arg(0)) : math::expf(b_, arg(0));
      case Op::log: return intrinsic(llvm::Intrinsic::log, arg(0));
      case Op::sin: return intrinsic(llvm::Intrinsic::sin, arg(0));
      case Op::cos: return intrinsic(llvm::Intrinsic::cos, arg(0));
      case Op::sqrt: return intrinsic(llvm::Intrinsic::sqrt, arg(0));
      case Op::rsqrt: return b_.CreateFDiv(constant(1, t), intrinsic(llvm::Intrinsic::sqrt, arg(0)));
      case Op::reciprocal: return b_.CreateFDiv(constant(1, t), arg(0));
      case Op::logical_not: return b_.CreateNot(arg(0));
      case Op::add:
        if (t == ScalarType::Bool) return b_.CreateOr(arg(0), arg(1));
        return fp ? b_.CreateFAdd(arg(0), arg(1)) : b_.CreateAdd(arg(0), arg(1));
      case Op::sub: return fp ? b_.CreateFSub(arg(0), arg(1)) : b_.CreateSub(arg(0), arg(1));
      case Op::mul:
        if (t == ScalarType::Bool) return b_.CreateAnd(arg(0), arg(1));
        return fp ? b_.CreateFMul(arg(0), arg(1)) : b_.CreateMul(arg(0), arg(1));
      case Op::div: return b_.CreateFDiv(arg(0), arg(1));
      case Op::pow: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, arg(0), arg(1));
      case Op::maximum:
      case Op::minimum: {
        const loop::OpInfo& op = loop::info(e.op);
        const bool max = op.combine == loop::Combine::max;
        if (!fp) {
          llvm::Value* c = t == ScalarType::Bool ? (max ? b_.CreateICmpUGT(arg(0), arg(1)) : b_.CreateICmpULT(arg(0), arg(1)))
                                                 : (max ? b_.CreateICmpSGT(arg(0), arg(1)) : b_.CreateICmpSLT(arg(0), arg(1)));
          return b_.CreateSelect(c, arg(0), arg(1));
        }
        llvm::Value* c = max ? b_.CreateFCmpOGT(arg(0), arg(1)) : b_.CreateFCmpOLT(arg(0), arg(1));
        llvm::Value* m = b_.CreateSelect(c, arg(0), arg(1));
        if (op.nan != loop::NanRule::either) return m;
        // NaN in either operand gives NaN, as eager's maximum/minimum/clamp do
        return b_.CreateSelect(b_.CreateFCmpUNO(arg(0), arg(1)), b_.CreateFAdd(arg(0), arg(1)), m);
      }
      case Op::eq:
      case Op::ne:
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge: return compare(e.op, k_.exprs[e.args[0]].dtype, arg(0), arg(1));
      case Op::logical_and: return b_.CreateAnd(arg(0), arg(1));
      case Op::logical_or: return b_.CreateOr(arg(0), arg(1));
      case Op::logical_xor: return b_.CreateXor(arg(0), arg(1));
      case Op::select: return b_.CreateSelect(arg(0), arg(1), arg(2));
      case Op::fma:
        if (fp) return b_.CreateIntrinsic(llvm::Intrinsic::fma, {arg(0)->getType()}, {arg(0), arg(1), arg(2)});
        return b_.CreateAdd(b_.CreateMul(arg(0), arg(1)), arg(2));
    }
    return nullptr;
  }

  llvm::Value* compare(Op op, ScalarType t, llvm::Value* x, llvm::Value* y) {
    using P = llvm::CmpInst::Predicate;
    P p;
    if (is_float(t)) {
      p = op == Op::eq ? P::FCMP_OEQ : op == Op::ne ? P::FCMP_UNE : op == Op::lt ? P::FCMP_OLT
          : op == Op::le ? P::FCMP_OLE : op == Op::gt ? P::FCMP_OGT : P::FCMP_OGE;
      return b_.CreateFCmp(p, x, y);
    }
    bool u = t == ScalarType::Bool;
    p = op == Op::eq ? P::ICMP_EQ : op == Op::ne ? P::ICMP_NE
        : op == Op::lt ? (u ? P::ICMP_ULT : P::ICMP_SLT) : op == Op::le ? (u ? P::ICMP_ULE : P::ICMP_SLE)
        : op == Op::gt ? (u ? P::ICMP_UGT : P::ICMP_SGT) : (u ? P::ICMP_UGE : P::ICMP_SGE);
    return b_.CreateICmp(p, x, y);
  }

  static constexpr int kLibmvecInterleave = 4;
  // Whether the kernel's loops call libmvec on their common path: float
  // exp/tanh/sigmoid are inline (llvm_math.h), and float sin is too for
  // arguments below 16 (InlineSin in llvm_passes.cpp; its call for larger
  // ones is rare, and interleaving the inline code only costs compile time).
  static bool calls_libmvec(const loop::Kernel& k) {
    for (const Expr& e : k.exprs) {
      bool f32 = e.dtype == ScalarType::Float;
      if ((e.op == Op::sin && !f32) || e.op == Op::cos || e.op == Op::log || e.op == Op::erf || e.op == Op::pow ||
          (!f32 && (e.op == Op::exp || e.op == Op::tanh || e.op == Op::sigmoid)))
        return true;
    }
    return false;
  }

  const loop::Kernel& k_;
  const bool calls_libmvec_;
  bool flat_ = false;                 // emitting a flat entry
  bool scalar_loops_ = false;         // innermost loops not to vectorize (emit_by_inner_stride)
  llvm::MDNode* loop_tag_ = nullptr;  // for the next innermost loop emitted (prefetch_tag)
  const loop::Schedule schedule_;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Value* inner_count_ = nullptr;  // i64, set by emit_body
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  const EmitTarget& jit_;
  llvm::IRBuilder<> b_;
  Reducer reducer_{b_, k_};
};

}  // namespace

void emit_kernel(const loop::Kernel& kernel, llvm::Module& m, const EmitTarget& target, const std::string& name,
                 bool flat) {
  Emitter(kernel, m.getContext(), m, target).emit(name, flat);
}

}  // namespace tj::jit
