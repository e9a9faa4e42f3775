// The streams of one green context: move-only owners, pooled by priority, behind their own lock.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
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

// A context's streams by priority. Like PyTorch's own stream pool, each priority has up to
// kPerPriority streams: the first requests create them, later ones get them again round robin,
// so a program that asks for a stream per request holds a bounded number of them. Several
// threads may ask at once.
class StreamPools {
 public:
  static constexpr std::size_t kPerPriority = 32;

  StreamPools() = default;
  StreamPools(const StreamPools&) = delete;
  StreamPools& operator=(const StreamPools&) = delete;
  ~StreamPools() { destroy(true); }

  // A stream of `priority`: the next one in turn, or while the pool is not yet full one that
  // `create(priority)` (returning an OwnedStream) makes; `*created` says which.
  template <typename Create>
  abi::CUstream next(int priority, Create&& create, bool* created) {
    std::lock_guard<std::mutex> lock(mutex_);
    Pool& pool = pools_[priority];
    *created = pool.next == pool.streams.size();
    if (*created) pool.streams.push_back(create(priority));
    abi::CUstream handed_out = pool.streams[pool.next].get();
    pool.next = (pool.next + 1) % kPerPriority;
    return handed_out;
  }
  // Streams created so far.
  std::size_t count() const;
  // Existing streams are handed out first again (a context taken back for reuse).
  void rewind();
  // Waits for the work queued on every stream; false if the driver reported an error. The
  // warnings of failures, like those of destroy, are given outside the lock: a warning handler
  // may wait for another thread (the Python one, for the GIL) that waits for this lock.
  bool synchronize() const noexcept;
  // Destroys every stream (waiting for its work first when `wait`).
  void destroy(bool wait) noexcept;

 private:
  struct Pool {
    std::vector<OwnedStream> streams;
    std::size_t next = 0;  // the stream handed out next; == streams.size(): create one first
  };
  mutable std::mutex mutex_;  // guards pools_
  std::map<int, Pool> pools_;
};

}  // namespace tgc
