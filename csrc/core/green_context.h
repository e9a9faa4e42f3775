// GreenContext: owns one CUDA green context and the streams made from it.
//
// Lifetime: a GreenContext is always held by shared_ptr. Everything that depends on it (its
// streams' Python objects, the SmPartition it hands out, partitions split from that) holds a
// reference, so the context outlives all of them. When the last reference goes, the
// destructor synchronises and destroys its streams, then destroys the green context.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "context_recycler.h"
#include "cuda_abi.h"
#include "sm_partition.h"
#include "split.h"
#include "workqueue.h"

namespace tgc {

// Counts of what the core holds right now, for leak checks: one consistent snapshot (a
// context moving to or from the idle set is counted once, never twice or not at all).
LiveCounts live_counts();

class GreenContext {
 public:
  using Kind = ContextKind;

  // Makes a green context on `device` from `sm` (the whole device when null) and, when given,
  // a workqueue configuration (driver 13.1+).
  static std::shared_ptr<GreenContext> create(int device, const SmPartition* sm,
                                              const std::optional<WorkqueueConfig>& workqueue,
                                              Kind kind = Kind::kUser);

  // One context per partition, all on `device`. Idle contexts that fit are taken on the
  // calling thread first; the contexts still to be made are created concurrently (the driver
  // lets several threads create contexts at once, and creation is mostly waiting on the
  // driver), with no helper thread for a single one. Either every context is made or none is
  // kept, and the first error in partition order is rethrown; a partition that cannot be used
  // at all (another device's, or a feature the driver lacks) fails before anything is created.
  static std::vector<std::shared_ptr<GreenContext>> create_all(
      int device, const std::vector<const SmPartition*>& partitions,
      const std::optional<WorkqueueConfig>& workqueue);

  // Contexts on disjoint partitions of the whole device `device`, one per group: split() of
  // the device's SMs as `requests` ask (on `path`), then create_all() of the groups. Nothing is
  // split when the driver lacks what `workqueue` needs. The SMs no group took stay unused.
  static std::vector<std::shared_ptr<GreenContext>> create_split(
      int device, const std::vector<GroupRequest>& requests,
      const std::optional<WorkqueueConfig>& workqueue, SplitPath path = SplitPath::kAuto);

  GreenContext(const GreenContext&) = delete;
  GreenContext& operator=(const GreenContext&) = delete;
  GreenContext(GreenContext&&) = delete;
  GreenContext& operator=(GreenContext&&) = delete;
  ~GreenContext();

  int device() const noexcept { return device_; }
  abi::CUgreenCtx handle() const noexcept { return context_->green_ctx; }
  abi::CUcontext context() const noexcept { return context_->context; }
  unsigned sm_count() const noexcept { return context_->resource.sm.smCount; }
  // The context's actual SM resource, splittable; it keeps `self` alive.
  static SmPartition sm_partition(const std::shared_ptr<GreenContext>& self);
  std::optional<unsigned> locality_domain_id() const;

  // A non-blocking stream of this context at `priority`, owned by the context. Like
  // PyTorch's own stream pool, each priority has up to kStreamsPerPriority streams: the
  // first calls create them, later calls hand them out again round robin, so a program that
  // asks for a stream per request holds a bounded number of them.
  static constexpr std::size_t kStreamsPerPriority = 32;
  abi::CUstream stream(int priority);
  // Streams created so far (at most kStreamsPerPriority per priority asked for).
  std::size_t stream_count() const;

  // Pushes this context onto the calling thread's context stack / pops it again. pop checks
  // that this context is the one on top.
  void push_current() const;
  void pop_current() const;


  // The device's default workqueue concurrency limit (13.1+).
  static unsigned max_workqueue_concurrency(int device);

 private:
  struct Prepared;
  static Prepared prepare(int device, const SmPartition* sm,
                          const std::optional<WorkqueueConfig>& workqueue, Kind kind);
  static std::shared_ptr<GreenContext> adopt(const Prepared& prepared, ContextInUse context);
  GreenContext(int device, ContextInUse context, unsigned fallback_alignment,
               std::shared_ptr<const void> keep_alive) noexcept;
  OwnedStream create_stream(int priority);

  int device_;
  ContextInUse context_;                     // never empty while the object lives
  const unsigned fallback_alignment_;        // the source partition's, for drivers before 13.0
  std::shared_ptr<const void> keep_alive_;   // what the source partition depended on
  mutable std::mutex streams_mutex_;         // guards context_->stream_pools
};

}  // namespace tgc
