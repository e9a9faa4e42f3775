#include "sm_probe.h"

#include <exception>
#include <mutex>

#include "../probe/sm_probe_ptx.h"
#include "current_context.h"
#include "driver_api.h"

namespace tgc {

namespace {

// The probe's library, loaded once per process (context-independent loading, driver 12.0+);
// a failed load fails every later launch the same way.
abi::CUkernel probe_kernel() {
  static std::once_flag once;
  static abi::CUkernel kernel = nullptr;
  static std::exception_ptr load_error;
  std::call_once(once, [] {
    try {
      const DriverApi& api = driver();
      abi::CUlibrary library = nullptr;
      api.call<entry::cuLibraryLoadData>(&library, static_cast<const void*>(probe::kSmProbePtx), nullptr,
                                         nullptr, 0u, nullptr, nullptr, 0u);
      api.call<entry::cuLibraryGetKernel>(&kernel, library, probe::kSmProbeKernel);
    } catch (...) {
      load_error = std::current_exception();
    }
  });
  if (load_error) std::rethrow_exception(load_error);
  return kernel;
}

}  // namespace

void launch_sm_probe(abi::CUstream stream, abi::CUdeviceptr sm_ids, unsigned blocks,
                     unsigned threads, unsigned long long spin_ns) {
  const DriverApi& api = driver();
  abi::CUkernel kernel = probe_kernel();
  // A CUfunction belongs to one context: take the one of the stream's own context (for a
  // green-context stream, the green context's), so the launch lands where the stream runs.
  abi::CUcontext context = nullptr;
  api.call<entry::cuStreamGetCtx>(stream, &context);
  CurrentContext current(context);
  abi::CUfunction function = nullptr;
  api.call<entry::cuKernelGetFunction>(&function, kernel);
  void* params[] = {&sm_ids, &spin_ns};
  api.call<entry::cuLaunchKernel>(function, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr);
}

}  // namespace tgc
