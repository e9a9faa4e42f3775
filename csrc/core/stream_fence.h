// StreamFence: orders the streams of green contexts after other streams of the device without
// the host waiting, e.g. to switch between layouts (sets of green-context streams) between
// serving steps: the new layout's streams run after what was queued on the old layout's.
//
// A fence holds one event per stream. `next.order_after(previous)` records each of
// `previous`'s events on its stream and makes every stream of `next` wait for all of them
// (one cuEventRecord per stream of `previous`, one cuStreamWaitEvent per pair of streams):
// the waits happen on the device, the host never synchronises.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "cuda_abi.h"

namespace tgc {

class GreenContext;

class StreamFence {
 public:
  struct Member {
    std::shared_ptr<GreenContext> context;
    abi::CUstream stream = nullptr;  // must be a stream of `context`
  };

  // One event per member, made in the member's context. Throws ValueError for an empty
  // list, a null context or stream, members on different devices, or a stream that belongs to
  // another context than the one given with it (cuStreamGetCtx); DriverError naming the call
  // if the driver fails (the events already made are destroyed again).
  explicit StreamFence(std::vector<Member> members);
  // Destroys the events (failures are warned about, never thrown).
  ~StreamFence();
  StreamFence(StreamFence&& other) noexcept;
  StreamFence& operator=(StreamFence&& other) noexcept;
  StreamFence(const StreamFence&) = delete;
  StreamFence& operator=(const StreamFence&) = delete;

  // Work queued on this fence's streams after this call runs after all work queued on
  // `before`'s streams before it. Returns at once (the waits happen on the device).
  // Ordering a fence after itself does nothing: its streams stay ordered only after their own
  // earlier work, they are not joined with each other. Throws ValueError if `before` is on
  // another device or either fence was moved from; DriverError naming the call if the driver
  // fails (some waits may then be in place already). Calls with one `before` from several
  // threads at once need the caller's synchronisation: its events are re-recorded each time.
  void order_after(const StreamFence& before) const;

  // Per position: stream i of this fence waits only for the work queued so far on stream i of
  // `before` (one cuEventRecord and one cuStreamWaitEvent per position), e.g. a new layout's
  // latency stream after the old latency stream alone, its batch stream after the old batch
  // stream alone. Both fences must have the same number of streams (ValueError otherwise);
  // otherwise as order_after.
  void order_each_after(const StreamFence& before) const;

  std::size_t size() const noexcept { return members_.size(); }  // 0 once moved from
  int device() const noexcept { return device_; }

 private:
  // An event belongs to the context it was made in. Each entry holds its context, so the
  // destructor destroys the events while their contexts are still alive (the contexts go with
  // the entries afterwards).
  struct Entry {
    std::shared_ptr<GreenContext> context;
    abi::CUstream stream;
    abi::CUevent event;
  };
  void destroy_events() noexcept;
  // ValueError if either fence was moved from or `before` is on another device.
  void check_orderable_after(const StreamFence& before, const char* method) const;

  std::vector<Entry> members_;
  int device_ = -1;
};

// Events held by all StreamFences of the process, for leak checks.
std::size_t live_fence_events() noexcept;

}  // namespace tgc
