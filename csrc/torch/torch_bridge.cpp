#include "torch_bridge.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include "../core/device.h"

namespace tgc::torch_bridge {

int current_device() { return static_cast<int>(c10::cuda::current_device()); }

void ensure_primary_context(int ordinal) {
  if (primary_context_active(ordinal)) return;
  // A device synchronisation under a device guard makes PyTorch's CUDA runtime create the
  // primary context (the runtime initialises contexts lazily, on the first real call).
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(ordinal));
  c10::cuda::device_synchronize();
}

const GreenContext::Host& host() {
  static const GreenContext::Host torch_host{&current_device, &ensure_primary_context};
  return torch_host;
}

std::pair<abi::CUstream, int> current_stream() {
  c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  return {reinterpret_cast<abi::CUstream>(stream.stream()), static_cast<int>(stream.device_index())};
}

c10::cuda::CUDAStream to_torch_stream(abi::CUstream stream, int ordinal) {
  return c10::cuda::getStreamFromExternal(reinterpret_cast<cudaStream_t>(stream),
                                          static_cast<c10::DeviceIndex>(ordinal));
}

std::tuple<std::int64_t, std::int64_t, std::int64_t> stream_triple(abi::CUstream stream,
                                                                   int ordinal) {
  c10::cuda::CUDAStream torch_stream = to_torch_stream(stream, ordinal);
  auto packed = torch_stream.pack3();
  return {static_cast<std::int64_t>(packed.stream_id),
          static_cast<std::int64_t>(packed.device_index),
          static_cast<std::int64_t>(packed.device_type)};
}

}  // namespace tgc::torch_bridge
