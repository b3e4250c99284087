// numpy arrays made in the traced frame from constants (translate_numpy.cpp).
// Internal to the tracer's call handlers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracer/translator.h"

namespace tj::tracer {

// Whether `o` is a numpy.ndarray (borrowed; false without numpy).
bool is_numpy_array(PyObject* o);

// An array made in the frame: a constant without a source holding an ndarray.
bool is_frame_array(const ValuePtr& v);

// A call folded at trace time because it only makes an array from constants:
// numpy's array-making functions and ufuncs (np.array, np.eye, np.sqrt, ...),
// and pure methods of an array made in the frame (`a.astype(np.float32)`).
// The result, or null with the failure set; `handled` false when the call is
// none of these (`fn` the callable's value, `f` its object).
ValuePtr call_numpy(InstructionTranslator& t, const ValuePtr& fn, PyObject* f, const std::vector<ValuePtr>& args,
                    const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);

// torch.from_numpy(a) / torch.tensor(a) / torch.as_tensor(a) of an array made
// in the frame: a tensor built from its values (torch's dtype for it unless
// `dtype=` says otherwise). Null with the failure set, or null with `handled`
// false when `array` is no such array.
ValuePtr tensor_of_frame_array(InstructionTranslator& t, const ValuePtr& array,
                               const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled);

}  // namespace tj::tracer
