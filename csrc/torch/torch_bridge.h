// The thin layer between the driver-facing core and PyTorch: devices as PyTorch sees them,
// the primary context initialised through PyTorch before green contexts are made, raw streams
// as c10::cuda::CUDAStream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include <c10/cuda/CUDAStream.h>

#include "../core/cuda_abi.h"
#include "../core/green_context.h"

namespace tgc::torch_bridge {

// PyTorch's current CUDA device.
int current_device();

// Makes sure device `ordinal`'s primary context exists, initialising it through PyTorch if
// nobody has yet, so that green contexts share it with PyTorch's allocations and kernels.
void ensure_primary_context(int ordinal);

// What the core's creation calls take from PyTorch: its current device, and
// ensure_primary_context() before a green context is made on a device.
const GreenContext::Host& host();

// PyTorch's current stream on its current device: the raw handle and the device.
std::pair<abi::CUstream, int> current_stream();

// A raw stream of device `ordinal` as PyTorch's stream.
c10::cuda::CUDAStream to_torch_stream(abi::CUstream stream, int ordinal);

// (stream_id, device_index, device_type): what torch.cuda.Stream needs to wrap the stream.
std::tuple<std::int64_t, std::int64_t, std::int64_t> stream_triple(abi::CUstream stream,
                                                                   int ordinal);

}  // namespace tgc::torch_bridge
