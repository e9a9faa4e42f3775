#include "sm_probe.h"

#include <mutex>

#include "../probe/sm_probe_ptx.h"
#include "driver_api.h"

namespace tgc {

namespace {

// The probe's library, loaded once per process (context-independent loading, driver 12.0+).
abi::CUkernel probe_kernel() {
  static std::once_flag once;
  static abi::CUkernel kernel = nullptr;
  static abi::CUresult load_result = abi::CUDA_SUCCESS;
  static const char* failed_call = nullptr;
  const DriverApi& api = driver();
  std::call_once(once, [&api] {
    abi::CUlibrary library = nullptr;
    load_result = api.cuLibraryLoadData(&library, probe::kSmProbePtx, nullptr, nullptr, 0,
                                        nullptr, nullptr, 0);
    if (load_result != abi::CUDA_SUCCESS) {
      failed_call = "cuLibraryLoadData";
      return;
    }
    load_result = api.cuLibraryGetKernel(&kernel, library, probe::kSmProbeKernel);
    if (load_result != abi::CUDA_SUCCESS) failed_call = "cuLibraryGetKernel";
  });
  if (failed_call != nullptr) api.check(load_result, failed_call);
  return kernel;
}

// Pops the context it pushed, whatever happens in between.
class PushedContext {
 public:
  explicit PushedContext(abi::CUcontext context) {
    driver().check(driver().cuCtxPushCurrent(context), "cuCtxPushCurrent");
  }
  PushedContext(const PushedContext&) = delete;
  PushedContext& operator=(const PushedContext&) = delete;
  ~PushedContext() {
    abi::CUcontext popped = nullptr;
    warn_if_cleanup_failed(driver().cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  }
};

}  // namespace

void launch_sm_probe(abi::CUstream stream, abi::CUdeviceptr sm_ids, unsigned blocks,
                     unsigned threads, unsigned long long spin_ns) {
  const DriverApi& api = driver();
  abi::CUkernel kernel = probe_kernel();
  // A CUfunction belongs to one context: take the one of the stream's own context (for a
  // green-context stream, the green context's), so the launch lands where the stream runs.
  abi::CUcontext context = nullptr;
  api.check(api.cuStreamGetCtx(stream, &context), "cuStreamGetCtx");
  PushedContext pushed(context);
  abi::CUfunction function = nullptr;
  api.check(api.cuKernelGetFunction(&function, kernel), "cuKernelGetFunction");
  void* params[] = {&sm_ids, &spin_ns};
  api.check(api.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr),
            "cuLaunchKernel");
}

}  // namespace tgc
