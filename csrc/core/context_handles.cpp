#include "context_handles.h"

#include <vector>

#include "current_context.h"
#include "device.h"
#include "driver_api.h"
#include "stream_sm_count.h"

namespace tgc {

std::unique_ptr<ContextHandles> ContextHandles::make(int device, const SmPartition& sm,
                                                     const std::optional<WorkqueueConfig>& workqueue) {
  const DriverApi& api = driver();
  abi::CUdevice handle = device_handle(device);
  std::vector<abi::CUdevResource> resources = sm.resources();
  if (workqueue) resources.push_back(workqueue_resource(device, *workqueue));

  abi::CUdevResourceDesc desc = nullptr;
  api.call<entry::cuDevResourceGenerateDesc>(&desc, resources.data(), static_cast<unsigned>(resources.size()));

  auto handles = std::make_unique<ContextHandles>();
  api.call<entry::cuGreenCtxCreate>(&handles->green_ctx, desc, handle, abi::CU_GREEN_CTX_DEFAULT_STREAM);
  // From here on `handles` destroys the context if a later call fails.
  api.call<entry::cuCtxFromGreenCtx>(&handles->context, handles->green_ctx);
  handles->resource = abi::zeroed_resource();
  api.call<entry::cuGreenCtxGetDevResource>(handles->green_ctx, &handles->resource,
                                         abi::CU_DEV_RESOURCE_TYPE_SM);
  remember_green_context(handles->green_ctx, handles->resource.sm.smCount);
  return handles;
}

OwnedStream ContextHandles::create_stream(int priority) const {
  const DriverApi& api = driver();
  abi::CUstream stream = nullptr;
  if (api.cuGreenCtxStreamCreate != nullptr) {
    api.call<entry::cuGreenCtxStreamCreate>(&stream, green_ctx, abi::CU_STREAM_NON_BLOCKING, priority);
    return OwnedStream(stream);
  }
  // Driver 12.4 has no cuGreenCtxStreamCreate: a stream created while the green context's
  // CUcontext is current belongs to the green context (documented for 12.4).
  CurrentContext current(context);
  api.call<entry::cuStreamCreateWithPriority>(&stream, abi::CU_STREAM_NON_BLOCKING, priority);
  OwnedStream created(stream);  // destroyed again if the pop fails
  current.pop();
  return created;
}

ContextHandles::~ContextHandles() {
  // Streams first: cuGreenCtxDestroy leaves its streams behind, detached.
  streams.destroy(!idle);
  if (green_ctx == nullptr) return;
  try {
    // Forgotten first: once destroyed, the driver may hand the handle out again.
    forget_green_context(green_ctx);
    driver().call_in_cleanup<entry::cuGreenCtxDestroy>(green_ctx);
  } catch (...) {
  }
}

}  // namespace tgc
