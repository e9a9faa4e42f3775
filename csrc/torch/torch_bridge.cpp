#include "torch_bridge.h"

#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <string>

#include "../core/device.h"
#include "../core/errors.h"

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

at::Tensor tensor_over(abi::CUdeviceptr address, std::size_t bytes, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides, at::ScalarType dtype, int ordinal,
                       std::shared_ptr<const void> owner) {
  if (sizes.size() != strides.size()) throw ValueError("sizes and strides must have the same length");
  long double last = 0;  // the largest element offset; -1 for no element
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) throw ValueError("sizes and strides must be 0 or more");
    if (sizes[i] == 0) last = -1;
    if (last >= 0) last += static_cast<long double>(sizes[i] - 1) * static_cast<long double>(strides[i]);
  }
  if ((last + 1) * static_cast<long double>(c10::elementSize(dtype)) > static_cast<long double>(bytes)) {
    throw ValueError("a tensor of these sizes and strides would reach past the " + std::to_string(bytes) +
                     " bytes it is made over");
  }
  const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(ordinal));
  // The device is given, so that PyTorch does not ask the CUDA runtime where the memory lives.
  return at::from_blob(
      reinterpret_cast<void*>(address), sizes, strides, [owner = std::move(owner)](void*) mutable { owner.reset(); },
      at::TensorOptions().dtype(dtype).device(device), device);
}

}  // namespace tgc::torch_bridge
