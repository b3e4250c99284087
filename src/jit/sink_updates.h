// New values of written graph inputs recomputed after the last step that may
// raise (issue 41: a training step's peak memory).
//
// A functional training graph returns the new value of every input it
// updates (an optimizer's parameters and moments) and AOT's wrapper copies
// them in; the llvm executor writes such a value into its input where it is
// made (lowering.cpp, plan_donations) only when no later step may raise on
// data: a failure reruns the frame from inputs as they were. A GAN's step
// updates the discriminator, then checks the generator's
// binary_cross_entropy input (it may raise): the discriminator's new moments
// were held from its update to the end of the step. Such a value that only
// the write-back reads after the check needs no buffer before it: it is
// recomputed, from what it reads, right after the check, where its kernel
// writes it into the input (Adam's exp_avg, exp_avg_sq; the parameter,
// which the generator's forward reads, is copied in there:
// Step::write_back).
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tj::jit {

// A copy of `graph` in which each such value is computed again right after
// the graph's last node that may raise on data (graph/effects.h), and the
// output returns the copy; nullptr when no value qualifies. A value
// qualifies when it is made before that node, its input's old value is
// read (otherwise lowering writes it in place where it is made), only the
// output and pure pointwise nodes read it (it then needs no buffer of its
// own before the check: the kernel that reads it computes it), and it is a
// chain of pure pointwise nodes reading only graph inputs, graph outputs,
// 0-d values and non-tensors (nothing else kept alive longer).
std::shared_ptr<const graph::Graph> sink_written_back_updates(const graph::Graph& graph);

}  // namespace tj::jit
