// CurrentContext: a context made current on the calling thread for a scope.
#pragma once

#include "cuda_abi.h"

namespace tgc {

// Pushes `context` onto the calling thread's context stack when made (DriverError if the
// driver refuses) and pops it when it goes, unless pop() did already. A pop on the way out
// that fails is reported as a warning; pop() reports it as a DriverError.
class CurrentContext {
 public:
  explicit CurrentContext(abi::CUcontext context);
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;
  ~CurrentContext();

  // Pops the context now (once; later calls do nothing).
  void pop();

 private:
  bool pushed_ = false;
};

}  // namespace tgc
