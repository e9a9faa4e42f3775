#include "stream_pool.h"

#include <utility>

#include "driver_api.h"

namespace tgc {

OwnedStream::OwnedStream(OwnedStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

OwnedStream& OwnedStream::operator=(OwnedStream&& other) noexcept {
  if (this != &other) {
    destroy();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void OwnedStream::destroy(bool wait) noexcept {
  if (stream_ == nullptr) return;
  try {
    const DriverApi& api = driver();
    // Work still queued must finish before the stream and its context go away: the driver
    // does not document what happens to pending work when a green context is destroyed.
    if (wait) api.call_in_cleanup<entry::cuStreamSynchronize>(stream_);
    api.call_in_cleanup<entry::cuStreamDestroy>(stream_);
  } catch (...) {
    // No driver to call (a process that can no longer use it): nothing can be released.
  }
  stream_ = nullptr;
}

std::size_t StreamPools::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t count = 0;
  for (const auto& [priority, pool] : pools_) count += pool.streams.size();
  return count;
}

void StreamPools::rewind() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [priority, pool] : pools_) pool.next = 0;
}

bool StreamPools::synchronize() const noexcept {
  std::vector<abi::CUresult> failures;  // warned of once the lock is released
  try {
    const DriverApi& api = driver();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [priority, pool] : pools_) {
      for (const OwnedStream& stream : pool.streams) {
        const abi::CUresult result = api.result_of<entry::cuStreamSynchronize>(stream.get());
        if (result != abi::CUDA_SUCCESS) failures.push_back(result);
      }
    }
  } catch (...) {
    return false;
  }
  for (const abi::CUresult result : failures) warn_if_cleanup_failed(result, entry::cuStreamSynchronize::kName);
  return failures.empty();
}

void StreamPools::destroy(bool wait) noexcept {
  std::map<int, Pool> doomed;  // destroyed (and warned of) once the lock is released
  {
    std::lock_guard<std::mutex> lock(mutex_);
    doomed.swap(pools_);
  }
  for (auto& [priority, pool] : doomed) {
    for (OwnedStream& stream : pool.streams) stream.destroy(wait);
  }
}

}  // namespace tgc
