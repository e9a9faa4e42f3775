// Idle green contexts kept for reuse.
//
// On driver 13.0 (measured on an H200) every cuGreenCtxCreate + cuGreenCtxDestroy cycle keeps
// 4 MiB of device memory and about 1.7 MiB of host memory that the process never gets back,
// and creating a context takes about 1.5 ms. So a GreenContext that is dropped does not destroy
// its driver context: its streams are synchronised and the context, with its streams, waits
// here (up to a limit, oldest evicted first) for the next GreenContext made from the same SMs
// with the same workqueue options, which gets it back in microseconds.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda_abi.h"

namespace tgc {

// A move-only owner of one stream: synchronises and destroys it on destruction.
class OwnedStream {
 public:
  explicit OwnedStream(abi::CUstream stream) noexcept : stream_(stream) {}
  OwnedStream(OwnedStream&& other) noexcept;
  OwnedStream& operator=(OwnedStream&& other) noexcept;
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream() { destroy(); }
  abi::CUstream get() const noexcept { return stream_; }
  // Destroys the stream now, first waiting for its work unless `wait` is false (its work is
  // known to be done).
  void destroy(bool wait = true) noexcept;

 private:
  abi::CUstream stream_ = nullptr;
};

struct StreamPool {
  std::vector<OwnedStream> streams;
  std::size_t next = 0;  // the stream handed out next; == streams.size(): create one first
};

// The driver objects of one green context. Destroying it destroys the streams (after
// synchronising them, unless `idle` says that was done already), then the green context.
struct ContextHandles {
  ContextHandles() = default;
  ContextHandles(const ContextHandles&) = delete;
  ContextHandles& operator=(const ContextHandles&) = delete;
  ~ContextHandles();

  abi::CUgreenCtx green_ctx = nullptr;
  abi::CUcontext context = nullptr;
  abi::CUdevResource resource{};                // the SMs the context actually has
  std::map<int, StreamPool> stream_pools;       // by priority, as asked for
  bool idle = false;  // every stream synchronised and unused since: no need to wait again
  std::size_t stream_count() const;
  // Waits for the work queued on every stream; false if the driver reported an error.
  bool synchronize() const noexcept;
};

// What a context was made from: reuse needs the same device, SMs and workqueue options.
struct RecycleKey {
  int device = 0;
  std::vector<abi::CUdevResource> sm;  // the partition asked for, as the driver described it
  bool has_workqueue = false;
  int workqueue_scope = 0;
  std::optional<unsigned> concurrency_limit;
  bool operator==(const RecycleKey& other) const noexcept;
};

// Who uses a context: a user, or an emulated split (see split.h).
enum class ContextKind { kUser, kInternal };

// Counts of what the core holds right now, for leak checks.
struct LiveCounts {
  std::size_t contexts = 0;           // green contexts in use by users
  std::size_t internal_contexts = 0;  // in use by emulated splits
  std::size_t streams = 0;            // streams of the contexts in use
  std::size_t idle_contexts = 0;      // kept for reuse (ContextRecycler)
  std::size_t idle_streams = 0;       // streams of the idle contexts
};

// The driver objects of one context in use, counted as in use by its kind for exactly as long
// as this owner holds them. ContextRecycler::take and ContextRecycler::adopt make one; when it
// goes, the context stops being counted and is destroyed, unless retire() handed it back for
// reuse first.
class ContextInUse {
 public:
  ContextInUse() noexcept = default;  // holds nothing, counts nothing
  ContextInUse(ContextInUse&& other) noexcept = default;
  ContextInUse& operator=(ContextInUse&& other) noexcept;
  ContextInUse(const ContextInUse&) = delete;
  ContextInUse& operator=(const ContextInUse&) = delete;
  ~ContextInUse() { retire(false); }

  explicit operator bool() const noexcept { return handles_ != nullptr; }
  ContextHandles* operator->() const noexcept { return handles_.get(); }
  ContextHandles& operator*() const noexcept { return *handles_; }
  const RecycleKey& key() const noexcept { return key_; }
  // Stops counting the context and keeps it for reuse when `reusable` (its streams are idle)
  // and the recycler's limit allows; destroys it otherwise. The owner is empty afterwards.
  void retire(bool reusable) noexcept;

 private:
  friend class ContextRecycler;
  // Owns `handles`, which the recycler has just counted as in use by `kind`.
  ContextInUse(const RecycleKey& key, ContextKind kind, std::unique_ptr<ContextHandles> handles) noexcept;

  RecycleKey key_;
  ContextKind kind_ = ContextKind::kUser;
  std::unique_ptr<ContextHandles> handles_;
};

// The recycler also keeps the counts of the contexts in use, under the same lock as the idle
// ones, so that a context moving between the two is always counted exactly once.
class ContextRecycler {
 public:
  // The process's recycler. Never destroyed: contexts still idle at exit go with the process.
  static ContextRecycler& instance();

  // An idle context made from `key`, now in use by `kind`; empty when none is idle.
  ContextInUse take(const RecycleKey& key, ContextKind kind);
  // `handles`, a context just made from `key` (with no streams yet), in use by `kind`.
  ContextInUse adopt(const RecycleKey& key, ContextKind kind, std::unique_ptr<ContextHandles> handles);
  // Counts a new stream of a context in use.
  void count_stream_created();
  // Destroys every idle context.
  void release_all();
  std::size_t limit() const;
  // Sets the most idle contexts kept (0: destroy contexts when dropped); evicts the excess.
  void set_limit(std::size_t limit);
  // All the counts, in use and idle, read together.
  LiveCounts counts() const;

 private:
  friend class ContextInUse;
  ContextRecycler();
  // Stops counting `handles` as in use by `kind` and, when `reusable` and the limit allows,
  // keeps it for reuse; otherwise gives it back, to be destroyed outside the lock.
  std::unique_ptr<ContextHandles> release(const RecycleKey& key, ContextKind kind,
                                          std::unique_ptr<ContextHandles> handles,
                                          bool reusable) noexcept;
  struct Entry {
    RecycleKey key;
    std::unique_ptr<ContextHandles> handles;
  };
  // Moves entries beyond the limit into `evicted`, to be destroyed outside the lock.
  void trim(std::list<Entry>& evicted) noexcept;
  // A fork() waits until no other thread holds the lock, so the child never inherits it held.
  static void lock_before_fork() noexcept;
  static void unlock_after_fork() noexcept;
  friend struct ContextRecyclerTestAccess;  // tests hold the lock across a fork

  mutable std::mutex mutex_;  // guards everything below
  std::list<Entry> idle_;     // most recently kept first
  std::size_t limit_;
  LiveCounts counts_;         // idle_contexts: idle_.size(), filled in by counts()
};

// The environment variable that sets the recycler's initial limit (default 16).
const char* idle_limit_env();
// ValueError when that variable is set to anything but a whole number 0 or more (the recycler
// then keeps the default); called before every context is made.
void check_idle_limit_env();

}  // namespace tgc
