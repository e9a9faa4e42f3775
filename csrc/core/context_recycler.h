// The recycler behind idle_contexts.h: what reuse is keyed on, the owner that counts a context
// in use, and the set of idle ones. Internal to the core.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "context_handles.h"
#include "cuda_abi.h"
#include "idle_contexts.h"

namespace tgc {

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
enum class ContextKind : int { kUser, kInternal };

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

}  // namespace tgc
