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
  std::lock_guard<std::mutex> lock(mutex_);
  bool ok = true;
  try {
    const DriverApi& api = driver();
    for (const auto& [priority, pool] : pools_) {
      for (const OwnedStream& stream : pool.streams) {
        const abi::CUresult result = api.result_of<entry::cuStreamSynchronize>(stream.get());
        warn_if_cleanup_failed(result, entry::cuStreamSynchronize::kName);
        ok = ok && result == abi::CUDA_SUCCESS;
      }
    }
  } catch (...) {
    return false;
  }
  return ok;
}

void StreamPools::destroy(bool wait) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [priority, pool] : pools_) {
    for (OwnedStream& stream : pool.streams) stream.destroy(wait);
  }
  pools_.clear();
}

}  // namespace tgc
