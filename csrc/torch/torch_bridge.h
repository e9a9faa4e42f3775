// The thin layer between the driver-facing core and PyTorch: devices as PyTorch sees them,
// the primary context initialised through PyTorch before green contexts are made, raw streams
// as c10::cuda::CUDAStream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>

#include "../core/cuda_abi.h"
#include "../core/green_context.h"

namespace tgc::torch_bridge {

// PyTorch's current CUDA device.
int current_device();

// Makes sure device `ordinal`'s primary context exists, initialising it through PyTorch if
// nobody has yet, so that green contexts share it with PyTorch's allocations and kernels.
void ensure_primary_context(int ordinal);

// PyTorch's current stream on its current device: the raw handle and the device.
std::pair<abi::CUstream, int> current_stream();

// A raw stream of device `ordinal` as PyTorch's stream.
c10::cuda::CUDAStream to_torch_stream(abi::CUstream stream, int ordinal);

// (stream_id, device_index, device_type): what torch.cuda.Stream needs to wrap the stream.
std::tuple<std::int64_t, std::int64_t, std::int64_t> stream_triple(abi::CUstream stream,
                                                                   int ordinal);

// `device`, or PyTorch's current device when none is given, checked against the devices the
// driver sees (RangeError).
int resolve_device(std::optional<long long> device);

// GreenContext::create(request) on the request's device (PyTorch's current one when it names
// none), after the device's primary context exists: PyTorch and the green contexts share it.
std::shared_ptr<GreenContext> create_context(const GreenContext::Request& request);

// GreenContext::create_all and create_split, likewise after the primary context exists.
std::vector<std::shared_ptr<GreenContext>> create_contexts(int device, const std::vector<const SmPartition*>& partitions,
                                                           const std::optional<WorkqueueConfig>& workqueue);
std::vector<std::shared_ptr<GreenContext>> create_split_contexts(std::optional<long long> device,
                                                                 const std::vector<GroupRequest>& requests,
                                                                 const std::optional<WorkqueueConfig>& workqueue,
                                                                 SplitPath path);

// A tensor of `dtype` on CUDA device `ordinal` over the `bytes` bytes at `address`, of `sizes`
// and `strides` (in elements), which holds `owner` until the tensor and every view of it are
// freed; ValueError when it would reach past those bytes. Makes no CUDA runtime call.
at::Tensor tensor_over(abi::CUdeviceptr address, std::size_t bytes, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides, at::ScalarType dtype, int ordinal,
                       std::shared_ptr<const void> owner);

}  // namespace tgc::torch_bridge
