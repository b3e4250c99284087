// Placeholder until AOT capture lands: every functional backend falls back
// (logged, counted in backend_fallbacks) to running the captured graph.
#include "jit/aot.h"

namespace tj::jit {

graph::Expected<CompiledFn> aot_compile(std::shared_ptr<const graph::Graph>, c10::ArrayRef<at::Tensor>,
                                        const Backend&, const AotOptions&, AotGraphs*) {
  return graph::Error{"AOT capture is not built yet"};
}

}  // namespace tj::jit
