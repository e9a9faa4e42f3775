// GreenContext::create_split: from split requests to contexts in one call.
#include "device.h"
#include "driver_api.h"
#include "green_context.h"

namespace tgc {

std::vector<std::shared_ptr<GreenContext>> GreenContext::create_split(
    std::optional<long long> device, const std::vector<GroupRequest>& requests,
    const std::optional<WorkqueueConfig>& workqueue, SplitPath path, const Host& host) {
  check_group_list(requests);  // needs no driver: before the device is looked up
  const int ordinal = resolve_device(device, host.current_device);
  if (host.prepare_device) host.prepare_device(ordinal);
  if (workqueue) driver().require_version("workqueue configuration", feature_version::kWorkqueues);
  const SplitResult parts = split(SmPartition::from_device(ordinal), requests, path);
  std::vector<const SmPartition*> groups;
  groups.reserve(parts.groups.size());
  for (const SmPartition& group : parts.groups) groups.push_back(&group);
  return create_all(ordinal, groups, workqueue);
}

}  // namespace tgc
