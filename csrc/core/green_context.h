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
#include <variant>
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
  // What the layer above the core supplies: the device a request naming none is about, and what
  // a device needs before a green context is made on it (PyTorch's layer makes sure the primary
  // context exists, so that PyTorch and the green contexts share it). Without them a request
  // must name its device, and nothing is done before creating.
  struct Host {
    std::function<int()> current_device;
    std::function<void(int)> prepare_device;
  };

  // The SMs a context is made on: the whole device, a partition, or the smallest partition of
  // at least `count` SMs.
  struct WholeDevice {};
  struct AtLeast {
    long long count = 0;
  };
  using Sms = std::variant<WholeDevice, const SmPartition*, AtLeast>;

  // What GreenContext(num_sms=..., sm_partition=..., workqueue options, device_id=...) asks for.
  struct Request {
    std::optional<long long> device;  // nullopt: the partition's, else the host's current device
    Sms sms = WholeDevice{};          // a null partition means the whole device
    std::optional<WorkqueueConfig> workqueue;
  };

  // The creation pipeline, each rule checked once, in this order: a count of SMs below 1 when
  // the device cannot be read (RangeError without the device's figures); the device (the
  // partition's, which `device` must name when given: ValueError; else `device` or the host's
  // current one: RangeError outside the machine's); the host's preparation of that device; the
  // SMs (a count outside 1 to the device's SM count: RangeError naming it); the driver's
  // features; then the context is made, or an idle one made from the same SMs and options reused.
  static std::shared_ptr<GreenContext> create(const Request& request, const Host& host = {});

  // A context on `device` from `sm` (the whole device when null) and, when given, a workqueue
  // configuration (driver 13.1+): create() of that request.
  static std::shared_ptr<GreenContext> create(int device, const SmPartition* sm,
                                              const std::optional<WorkqueueConfig>& workqueue);

  // The device `request` is about, checked as create() checks it.
  static int device_of(const Request& request, const Host& host = {});

  // One context per partition, all on `device`. Idle contexts that fit are taken on the
  // calling thread first; the contexts still to be made are created concurrently (the driver
  // lets several threads create contexts at once, and creation is mostly waiting on the
  // driver), with no helper thread for a single one. Either every context is made or none is
  // kept, and the first error in partition order is rethrown; a partition that cannot be used
  // at all (another device's, or a feature the driver lacks) fails before anything is created.
  // The host prepares `device` first.
  static std::vector<std::shared_ptr<GreenContext>> create_all(
      int device, const std::vector<const SmPartition*>& partitions,
      const std::optional<WorkqueueConfig>& workqueue, const Host& host = {});

  // Contexts on disjoint partitions of the whole device `device` (the host's current one when
  // none is given), one per group: the rules of `requests` that need no driver first, then the
  // device, its preparation by the host, split() of its SMs as `requests` ask (on `path`) and
  // create_all() of the groups. Nothing is split when the driver lacks what `workqueue` needs.
  // The SMs no group took stay unused.
  static std::vector<std::shared_ptr<GreenContext>> create_split(
      std::optional<long long> device, const std::vector<GroupRequest>& requests,
      const std::optional<WorkqueueConfig>& workqueue, SplitPath path = SplitPath::kAuto, const Host& host = {});

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
