// Streams, events, and the SM probe's library, kernel and launch.
#include <cstring>
#include <vector>

#include "sim_driver_state.h"

namespace simdriver {

CUresult new_stream(GreenCtx* green, unsigned flags, int priority, CUstream* out) {
  if (!(flags & CU_STREAM_NON_BLOCKING) || priority > 0) return CUDA_ERROR_INVALID_VALUE;
  auto* st = new Stream;
  st->green = green;
  state().streams.insert(st);
  *out = reinterpret_cast<CUstream>(st);
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamCreateWithPriority(CUstream* out, unsigned flags, int priority) {
  ENTER("cuStreamCreateWithPriority");
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_VALUE;
  return new_stream(green_of_context(t_context_stack.back()), flags, priority, out);
}

CUresult sim_cuStreamSynchronize(CUstream stream) {
  ENTER("cuStreamSynchronize");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  if (CUresult code = detached(st)) return code;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamDestroy(CUstream stream) {
  ENTER("cuStreamDestroy");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  st->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamGetCtx(CUstream stream, CUcontext* ctx) {
  ENTER("cuStreamGetCtx");
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  *ctx = st->green ? reinterpret_cast<CUcontext>(&st->green->context_tag)
                   : reinterpret_cast<CUcontext>(&g_primary_tag);
  return CUDA_SUCCESS;
}

// Events follow the documented rules: an event belongs to the context current at its creation
// (a green context's when that one was pushed); cuEventRecord needs the event and the stream in
// the same context (CUDA_ERROR_INVALID_HANDLE otherwise); cuStreamWaitEvent takes an event of
// any context; an event may be destroyed while pending.
CUresult sim_cuEventCreate(CUevent* out, unsigned flags) {
  ENTER("cuEventCreate");
  // CU_EVENT_BLOCKING_SYNC 0x1, DISABLE_TIMING 0x2, INTERPROCESS 0x4 (needs DISABLE_TIMING).
  if (out == nullptr || (flags & ~0x7u) || ((flags & 0x4u) && !(flags & CU_EVENT_DISABLE_TIMING))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (t_context_stack.empty()) return kInvalidContext;
  GreenCtx* green = green_of_context(t_context_stack.back());
  if (green && !green->alive) {  // a destroyed green context left current
    ++s.misuse;
    return kInvalidContext;
  }
  auto* ev = new Event;
  ev->green = green;
  ev->flags = flags;
  s.events.insert(ev);
  *out = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}

CUresult sim_cuEventRecord(CUevent event, CUstream stream) {
  ENTER("cuEventRecord");
  auto* ev = reinterpret_cast<Event*>(event);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_event(ev) || !valid_stream(st)) return kInvalidHandle;
  if (CUresult code = detached(st)) return code;
  if (ev->green != st->green) {  // not the stream's context
    ++s.misuse;
    return kInvalidHandle;
  }
  ev->recorded_on = st;
  return CUDA_SUCCESS;
}

CUresult sim_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  ENTER("cuStreamWaitEvent");
  auto* ev = reinterpret_cast<Event*>(event);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st) || !valid_event(ev)) return kInvalidHandle;
  if (flags & ~0x1u) return CUDA_ERROR_INVALID_VALUE;  // CU_EVENT_WAIT_DEFAULT 0, _EXTERNAL 0x1
  if (CUresult code = detached(st)) return code;
  s.wait_edges.push_back({st, ev->recorded_on});
  return CUDA_SUCCESS;
}

CUresult sim_cuEventDestroy(CUevent event) {
  ENTER("cuEventDestroy");
  auto* ev = reinterpret_cast<Event*>(event);
  if (!valid_event(ev)) return kInvalidHandle;
  if (ev->green && !ev->green->alive) ++s.misuse;  // the event outlived its context
  ev->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuLibraryLoadData(CUlibrary* lib, const void* code, int*, void**, unsigned, int*, void**, unsigned) {
  ENTER("cuLibraryLoadData");
  if (code == nullptr || std::strstr(static_cast<const char*>(code), ".entry") == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* handle = new int(0);
  s.libraries.insert(handle);
  *lib = reinterpret_cast<CUlibrary>(handle);
  return CUDA_SUCCESS;
}

CUresult sim_cuLibraryUnload(CUlibrary lib) {
  ENTER("cuLibraryUnload");
  if (!s.libraries.erase(lib)) return kInvalidHandle;
  delete reinterpret_cast<int*>(lib);
  return CUDA_SUCCESS;
}

namespace {
int g_kernel_tag = 0;
int g_function_tag = 0;
}  // namespace

CUresult sim_cuLibraryGetKernel(CUkernel* kernel, CUlibrary lib, const char* name) {
  ENTER("cuLibraryGetKernel");
  if (!s.libraries.count(lib)) return kInvalidHandle;
  if (std::strcmp(name, "tgc_sm_probe") != 0) return CUDA_ERROR_NOT_FOUND;
  *kernel = reinterpret_cast<CUkernel>(&g_kernel_tag);
  return CUDA_SUCCESS;
}

CUresult sim_cuKernelGetFunction(CUfunction* function, CUkernel kernel) {
  ENTER("cuKernelGetFunction");
  if (kernel != reinterpret_cast<CUkernel>(&g_kernel_tag) || t_context_stack.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *function = reinterpret_cast<CUfunction>(&g_function_tag);
  return CUDA_SUCCESS;
}

// The probe: block b "runs" on the stream's SMs in turn and writes that SM's id.
CUresult sim_cuLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream stream, void** params, void**) {
  ENTER("cuLaunchKernel");
  if (f != reinterpret_cast<CUfunction>(&g_function_tag) || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  std::vector<int> sms;
  if (st->green) {
    sms = st->green->desc.sms;
  } else {
    for (int i = 0; i < s.config.sm_count; ++i) sms.push_back(i);
  }
  auto* out = reinterpret_cast<unsigned*>(*static_cast<CUdeviceptr*>(params[0]));
  for (unsigned b = 0; b < gx; ++b) out[b] = static_cast<unsigned>(sms[b % sms.size()]);
  return CUDA_SUCCESS;
}

}  // namespace simdriver
