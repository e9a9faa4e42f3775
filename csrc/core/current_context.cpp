#include "current_context.h"

#include "driver_api.h"

namespace tgc {

CurrentContext::CurrentContext(abi::CUcontext context) {
  const DriverApi& api = driver();
  api.call<entry::cuCtxPushCurrent>(context);
  pushed_ = true;
}

CurrentContext::~CurrentContext() {
  if (!pushed_) return;
  try {
    abi::CUcontext popped = nullptr;
    driver().call_in_cleanup<entry::cuCtxPopCurrent>(&popped);
  } catch (...) {
    // No driver to call any more: nothing to pop.
  }
}

void CurrentContext::pop() {
  if (!pushed_) return;
  pushed_ = false;
  const DriverApi& api = driver();
  abi::CUcontext popped = nullptr;
  api.call<entry::cuCtxPopCurrent>(&popped);
}

}  // namespace tgc
