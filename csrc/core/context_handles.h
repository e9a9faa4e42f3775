// The driver objects of one green context, made and destroyed here and nowhere else. Internal
// to the core.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "cuda_abi.h"
#include "sm_partition.h"
#include "stream_pool.h"
#include "workqueue.h"

namespace tgc {

// The driver objects of one green context. Destroying it destroys the streams (after
// synchronising them, unless `idle` says that was done already), then the green context.
struct ContextHandles {
  ContextHandles() = default;
  ContextHandles(const ContextHandles&) = delete;
  ContextHandles& operator=(const ContextHandles&) = delete;
  ~ContextHandles();

  // A new green context on `device` from `sm` and, when given, a workqueue configuration; its
  // context, its actual SM resource, and no streams yet.
  static std::unique_ptr<ContextHandles> make(int device, const SmPartition& sm,
                                              const std::optional<WorkqueueConfig>& workqueue);
  // A new non-blocking stream of this context at `priority` (for `streams` to own).
  OwnedStream create_stream(int priority) const;

  abi::CUgreenCtx green_ctx = nullptr;
  abi::CUcontext context = nullptr;
  abi::CUdevResource resource{};                // the SMs the context actually has
  StreamPools streams;                          // by priority, as asked for
  bool idle = false;  // every stream synchronised and unused since: no need to wait again
  std::size_t stream_count() const { return streams.count(); }
  bool synchronize() const noexcept { return streams.synchronize(); }
};

}  // namespace tgc
