#include "current_context.h"

#include "driver_api.h"

namespace tgc {

CurrentContext::CurrentContext(abi::CUcontext context) {
  const DriverApi& api = driver();
  api.check(api.cuCtxPushCurrent(context), "cuCtxPushCurrent");
  pushed_ = true;
}

CurrentContext::~CurrentContext() {
  if (!pushed_) return;
  try {
    abi::CUcontext popped = nullptr;
    warn_if_cleanup_failed(driver().cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  } catch (...) {
    // No driver to call any more: nothing to pop.
  }
}

void CurrentContext::pop() {
  if (!pushed_) return;
  pushed_ = false;
  const DriverApi& api = driver();
  abi::CUcontext popped = nullptr;
  api.check(api.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
}

}  // namespace tgc
