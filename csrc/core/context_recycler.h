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
  ~OwnedStream();
  abi::CUstream get() const noexcept { return stream_; }

 private:
  void reset() noexcept;
  abi::CUstream stream_ = nullptr;
};

struct StreamPool {
  std::vector<OwnedStream> streams;
  std::size_t next = 0;  // the stream handed out next; == streams.size(): create one first
};

// The driver objects of one green context. Destroying it destroys the streams (after
// synchronising them), then the green context.
struct ContextHandles {
  ContextHandles() = default;
  ContextHandles(const ContextHandles&) = delete;
  ContextHandles& operator=(const ContextHandles&) = delete;
  ~ContextHandles();

  abi::CUgreenCtx green_ctx = nullptr;
  abi::CUcontext context = nullptr;
  abi::CUdevResource resource{};                // the SMs the context actually has
  std::map<int, StreamPool> stream_pools;       // by priority, as asked for
  std::size_t stream_count() const;
  // Waits for the work queued on every stream; false if the driver reported an error.
  bool synchronize() const noexcept;
};

// What a context was made from: reuse needs the same device, SMs and workqueue options.
struct RecycleKey {
  int device = 0;
  abi::CUdevResource sm{};  // the partition asked for, as the driver described it
  bool has_workqueue = false;
  int workqueue_scope = 0;
  std::optional<unsigned> concurrency_limit;
  bool operator==(const RecycleKey& other) const noexcept;
};

class ContextRecycler {
 public:
  // The process's recycler. Never destroyed: contexts still idle at exit go with the process.
  static ContextRecycler& instance();

  // An idle context made from `key`, or null.
  std::unique_ptr<ContextHandles> take(const RecycleKey& key);
  // Keeps `handles` (whose streams are idle) for reuse; gives it back when the limit is 0.
  std::unique_ptr<ContextHandles> keep(const RecycleKey& key, std::unique_ptr<ContextHandles> handles);
  // Destroys every idle context.
  void release_all();
  std::size_t limit() const;
  // Sets the most idle contexts kept (0: destroy contexts when dropped); evicts the excess.
  void set_limit(std::size_t limit);
  std::size_t idle_contexts() const;
  std::size_t idle_streams() const;

 private:
  ContextRecycler();
  struct Entry {
    RecycleKey key;
    std::unique_ptr<ContextHandles> handles;
  };
  // Moves entries beyond the limit into `evicted`, to be destroyed outside the lock.
  void trim(std::list<Entry>& evicted) noexcept;

  mutable std::mutex mutex_;
  std::list<Entry> idle_;  // most recently kept first
  std::size_t limit_;
  std::size_t idle_streams_ = 0;
};

// The environment variable that sets the recycler's initial limit (default 16).
const char* idle_limit_env();

}  // namespace tgc
