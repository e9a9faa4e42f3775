#include "workqueue.h"

#include "device.h"
#include "driver_api.h"

namespace tgc {

abi::CUdevWorkqueueConfigScope workqueue_scope_named(const std::string& name) {
  if (name == "device_ctx") return abi::CU_WORKQUEUE_SCOPE_DEVICE_CTX;
  if (name == "balanced") return abi::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  throw unknown_workqueue_scope("'" + name + "'");
}

ValueError unknown_workqueue_scope(const std::string& shown) {
  return ValueError("workqueue_scope must be one of 'device_ctx', 'balanced' or None, got " + shown);
}

abi::CUdevResource workqueue_resource(int device, const WorkqueueConfig& config) {
  const DriverApi& api = driver();
  api.require_version("workqueue configuration", feature_version::kWorkqueues);
  abi::CUdevResource resource = abi::zeroed_resource();
  api.call<entry::cuDeviceGetDevResource>(device_handle(device), &resource,
                                       abi::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG);
  resource.wqConfig.sharingScope = config.scope;
  if (config.concurrency_limit) resource.wqConfig.wqConcurrencyLimit = *config.concurrency_limit;
  return resource;
}

}  // namespace tgc
