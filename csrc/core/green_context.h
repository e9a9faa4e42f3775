// GreenContext: owns one CUDA green context and the streams made from it.
//
// Lifetime: a GreenContext is always held by shared_ptr. Everything that depends on it (its
// streams' Python objects, the SmPartition it hands out, partitions split from that) holds a
// reference, so the context outlives all of them. When the last reference goes, the
// destructor synchronises and destroys its streams, then destroys the green context.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cuda_abi.h"
#include "idle_contexts.h"
#include "sm_partition.h"
#include "split.h"
#include "workqueue.h"

namespace tgc {

class ContextInUse;  // context_recycler.h
struct ContextHandles;
enum class ContextKind : int;

class GreenContext {
 public:
  // Makes a green context on `device` from `sm` (the whole device when null) and, when given,
  // a workqueue configuration (driver 13.1+).
  static std::shared_ptr<GreenContext> create(int device, const SmPartition* sm,
                                              const std::optional<WorkqueueConfig>& workqueue);

  // What GreenContext(num_sms=..., sm_partition=..., device_id=...) asks for: a context on
  // `sm` (whose device `device` must name when given), on the smallest partition of at least
  // `num_sms` SMs (RangeError outside 1 to the device's SM count), or on the whole device.
  // `device` when given is checked (RangeError), else `current_device()` gives it.
  struct Request {
    std::optional<long long> device;
    const SmPartition* sm = nullptr;
    std::optional<long long> num_sms;
    std::optional<WorkqueueConfig> workqueue;
  };
  // The device of `request`: the partition's, `device` checked, or `current_device()` checked
  // (after the driver is asked for its devices, so that without a driver its error comes first).
  static int device_of(const Request& request, const std::function<int()>& current_device);
  // The context `request` asks for on `device` (device_of()'s answer).
  static std::shared_ptr<GreenContext> create(int device, const Request& request);

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
  abi::CUgreenCtx handle() const noexcept;
  abi::CUcontext context() const noexcept;
  unsigned sm_count() const noexcept;
  // The context's actual SM resource, splittable; it keeps `self` alive.
  static SmPartition sm_partition(const std::shared_ptr<GreenContext>& self);
  std::optional<unsigned> locality_domain_id() const;

  // A non-blocking stream of this context at `priority`, owned by the context: up to
  // kStreamsPerPriority of each priority, handed out round robin (StreamPools).
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
  friend struct InternalContexts;  // an emulated split's contexts (internal_contexts.h)
  struct Prepared;
  static Prepared prepare(int device, const SmPartition* sm,
                          const std::optional<WorkqueueConfig>& workqueue, ContextKind kind);
  static std::shared_ptr<GreenContext> create_as(ContextKind kind, int device, const SmPartition* sm,
                                                 const std::optional<WorkqueueConfig>& workqueue);
  static std::shared_ptr<GreenContext> adopt(const Prepared& prepared, ContextInUse context);
  GreenContext(int device, ContextInUse context, unsigned fallback_alignment, KeepAlive keep_alive);
  ContextHandles& handles() const noexcept;

  int device_;
  std::unique_ptr<ContextInUse> context_;  // never empty while the object lives
  const unsigned fallback_alignment_;      // the source partition's, for drivers before 13.0
  KeepAlive keep_alive_;                   // what the source partition depended on
};

}  // namespace tgc
