#include "stream_fence.h"

#include <atomic>
#include <string>
#include <utility>

#include "current_context.h"
#include "driver_api.h"
#include "errors.h"
#include "green_context.h"
#include "warnings.h"

// The driver rules this relies on (CUDA driver API reference):
// - cuEventRecord: the event and the stream must belong to the same context, otherwise it
//   fails with CUDA_ERROR_INVALID_HANDLE. So each event is made in its own stream's context,
//   with that context pushed current around cuEventCreate. (Driver 13.0 on an H200 was seen
//   accepting an event of another green context of the device; nothing documents that.)
// - cuStreamWaitEvent: the event may come from another context (of the device) than the
//   stream, so a stream of one green context can wait for an event of another one. The wait
//   is for the event's last recording as of the call: later re-recordings do not change it.
// - cuEventDestroy may be called while a recorded event is still pending; the driver
//   releases it once it completes.

namespace tgc {

namespace {

std::atomic<std::size_t> g_live_fence_events{0};

// An event of `context` (cuEventCreate makes it in the current context).
abi::CUevent create_event(const GreenContext& context) {
  const DriverApi& api = driver();
  abi::CUevent event = nullptr;
  CurrentContext current(context.context());
  api.call<entry::cuEventCreate>(&event, abi::CU_EVENT_DISABLE_TIMING);
  try {
    current.pop();
  } catch (...) {
    api.call_in_cleanup<entry::cuEventDestroy>(event);
    throw;
  }
  g_live_fence_events.fetch_add(1);
  return event;
}

}  // namespace

std::size_t live_fence_events() noexcept { return g_live_fence_events.load(); }

StreamFence::StreamFence(std::vector<Member> members) {
  if (members.empty()) throw ValueError("a StreamFence needs at least one stream");
  for (const Member& member : members) {
    if (member.context == nullptr || member.stream == nullptr) {
      throw ValueError("every stream of a StreamFence needs its green context and a non-null handle");
    }
    if (member.context->device() != members.front().context->device()) {
      throw ValueError("the streams of a StreamFence must be on one device, not on devices " +
                       std::to_string(members.front().context->device()) + " and " +
                       std::to_string(member.context->device()));
    }
  }
  device_ = members.front().context->device();
  const DriverApi& api = driver();
  for (std::size_t i = 0; i < members.size(); ++i) {
    // A green-context stream's context is the green context's CUcontext (cuCtxFromGreenCtx).
    abi::CUcontext owner = nullptr;
    api.call<entry::cuStreamGetCtx>(members[i].stream, &owner);
    if (owner != members[i].context->context()) {
      throw ValueError("stream " + std::to_string(i) + " of the StreamFence is not a stream of the green context "
                       "given with it; give each stream with the context it was made from");
    }
  }
  members_.reserve(members.size());
  try {
    for (Member& member : members) {
      abi::CUevent event = create_event(*member.context);
      members_.push_back(Entry{std::move(member.context), member.stream, event});  // reserved: no throw
    }
  } catch (...) {
    destroy_events();
    throw;
  }
}

StreamFence::~StreamFence() { destroy_events(); }

StreamFence::StreamFence(StreamFence&& other) noexcept
    : members_(std::move(other.members_)), device_(other.device_) {
  other.members_.clear();
}

StreamFence& StreamFence::operator=(StreamFence&& other) noexcept {
  if (this != &other) {
    destroy_events();
    members_ = std::move(other.members_);
    other.members_.clear();
    device_ = other.device_;
  }
  return *this;
}

void StreamFence::destroy_events() noexcept {
  if (members_.empty()) return;
  try {
    const DriverApi& api = driver();
    for (const Entry& member : members_) {
      api.call_in_cleanup<entry::cuEventDestroy>(member.event);
    }
  } catch (...) {
    // No driver to call (a process that can no longer use it): nothing can be released.
  }
  g_live_fence_events.fetch_sub(members_.size());
  members_.clear();  // the contexts go after their events
}

void StreamFence::check_orderable_after(const StreamFence& before, const char* method) const {
  if (members_.empty() || before.members_.empty()) {
    throw ValueError(std::string("StreamFence.") + method + ": a StreamFence that was moved from has no streams");
  }
  if (before.device_ != device_) {
    throw ValueError(std::string("StreamFence.") + method + ": the fence is on device " +
                     std::to_string(device_) + ", the one to order it after on device " +
                     std::to_string(before.device_));
  }
}

void StreamFence::order_after(const StreamFence& before) const {
  // The same layout again: each stream stays after its own queued work, and nothing more is
  // asked (the fence's streams are not joined with each other).
  if (&before == this) return;
  check_orderable_after(before, "order_after");
  const DriverApi& api = driver();
  for (const Entry& done : before.members_) {
    api.call<entry::cuEventRecord>(done.event, done.stream);
  }
  for (const Entry& waiting : members_) {
    for (const Entry& done : before.members_) {
      api.call<entry::cuStreamWaitEvent>(waiting.stream, done.event, 0);
    }
  }
}

void StreamFence::order_each_after(const StreamFence& before) const {
  if (&before == this) return;
  check_orderable_after(before, "order_each_after");
  if (before.members_.size() != members_.size()) {
    throw ValueError("StreamFence.order_each_after: the fences must have as many streams as each other, not " +
                     std::to_string(members_.size()) + " and " + std::to_string(before.members_.size()));
  }
  const DriverApi& api = driver();
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const Entry& done = before.members_[i];
    api.call<entry::cuEventRecord>(done.event, done.stream);
    api.call<entry::cuStreamWaitEvent>(members_[i].stream, done.event, 0);
  }
}

}  // namespace tgc
