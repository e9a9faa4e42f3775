// Error names, devices, the current-context stack and green contexts.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sim_driver_state.h"

namespace simdriver {

CUresult sim_cuGetErrorName(CUresult code, const char** name) {
  static const std::map<int, const char*> names = {
      {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"}, {4, "CUDA_ERROR_DEINITIALIZED"},
      {100, "CUDA_ERROR_NO_DEVICE"}, {101, "CUDA_ERROR_INVALID_DEVICE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"},
      {801, "CUDA_ERROR_NOT_SUPPORTED"}, {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
      {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"}, {917, "CUDA_ERROR_STREAM_DETACHED"},
      {999, "CUDA_ERROR_UNKNOWN"}};
  auto it = names.find(code);
  if (it == names.end()) return CUDA_ERROR_INVALID_VALUE;
  *name = it->second;
  return CUDA_SUCCESS;
}

CUresult sim_cuGetErrorString(CUresult code, const char** text) {
  const char* name = nullptr;
  if (sim_cuGetErrorName(code, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  static thread_local std::string buffer;
  buffer = std::string("simulated driver: ") + name;
  *text = buffer.c_str();
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetCount(int* count) {
  ENTER("cuDeviceGetCount");
  *count = s.config.device_count;
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGet(CUdevice* device, int ordinal) {
  ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult sim_cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  ENTER("cuDeviceGetAttribute");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = s.config.sm_count; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = s.config.cc_major; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT:  // an attribute of 13.4 drivers
      if (s.config.version < 13040) return CUDA_ERROR_INVALID_VALUE;
      *value = s.config.locality_domains > 0 ? s.config.locality_domains : 1;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult sim_cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active) {
  ENTER("cuDevicePrimaryCtxGetState");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = 1;
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxGetCurrent(CUcontext* ctx) {
  ENTER("cuCtxGetCurrent");
  *ctx = t_context_stack.empty() ? nullptr : t_context_stack.back();
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxPushCurrent(CUcontext ctx) {
  ENTER("cuCtxPushCurrent");
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  t_context_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxPopCurrent(CUcontext* ctx) {
  ENTER("cuCtxPopCurrent");
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (ctx) *ctx = t_context_stack.back();
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc desc, CUdevice device, unsigned flags) {
  ENTER("cuGreenCtxCreate");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  if (!(flags & CU_GREEN_CTX_DEFAULT_STREAM)) return CUDA_ERROR_INVALID_VALUE;
  auto it = std::find_if(s.descriptors.begin(), s.descriptors.end(),
                         [desc](const auto& d) { return reinterpret_cast<CUdevResourceDesc>(d.get()) == desc; });
  if (it == s.descriptors.end()) return kInvalidHandle;
  if ((*it)->device >= 0 && (*it)->device != device) return CUDA_ERROR_INVALID_DEVICE;
  auto* g = new GreenCtx;
  g->device = device;
  g->desc = **it;
  if (g->desc.sms.empty()) {  // a workqueue-only descriptor: all SMs
    for (int i = 0; i < s.config.sm_count; ++i) g->desc.sms.push_back(i);
    g->desc.alignment = device_alignment();
  }
  s.green_ctxs.insert(g);
  *out = reinterpret_cast<CUgreenCtx>(g);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxDestroy(CUgreenCtx green) {
  ENTER("cuGreenCtxDestroy");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  g->alive = false;
  return CUDA_SUCCESS;
}

CUresult sim_cuCtxFromGreenCtx(CUcontext* out, CUgreenCtx green) {
  ENTER("cuCtxFromGreenCtx");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  *out = reinterpret_cast<CUcontext>(&g->context_tag);
  return CUDA_SUCCESS;
}

// The green context a stream belongs to (null: a regular context's). NULL and the special
// handles stand for the default stream of the current context, as documented.
CUresult sim_cuStreamGetGreenCtx(CUstream stream, CUgreenCtx* out) {
  ENTER("cuStreamGetGreenCtx");
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  if (value <= 2) {  // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
    if (t_context_stack.empty()) return kInvalidContext;
    *out = reinterpret_cast<CUgreenCtx>(green_of_context(t_context_stack.back()));
    return CUDA_SUCCESS;
  }
  auto* st = reinterpret_cast<Stream*>(stream);
  if (!valid_stream(st)) return kInvalidHandle;
  *out = reinterpret_cast<CUgreenCtx>(st->green);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxStreamCreate(CUstream* out, CUgreenCtx green, unsigned flags, int priority) {
  ENTER("cuGreenCtxStreamCreate");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  return new_stream(g, flags, priority, out);
}

}  // namespace simdriver
