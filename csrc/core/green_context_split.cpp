// GreenContext::create_split: from split requests to contexts in one call.
#include "driver_api.h"
#include "green_context.h"

namespace tgc {

std::vector<std::shared_ptr<GreenContext>> GreenContext::create_split(
    int device, const std::vector<GroupRequest>& requests,
    const std::optional<WorkqueueConfig>& workqueue, SplitPath path) {
  if (workqueue) driver().require_version("workqueue configuration", feature_version::kWorkqueues);
  const SplitResult parts = split(SmPartition::from_device(device), requests, path);
  std::vector<const SmPartition*> groups;
  groups.reserve(parts.groups.size());
  for (const SmPartition& group : parts.groups) groups.push_back(&group);
  return create_all(device, groups, workqueue);
}

}  // namespace tgc
