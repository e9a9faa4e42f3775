// Green-context streams as c10::cuda::CUDAStream, for LibTorch programs.
//
//   auto ctx = tgc::GreenContext::create(0, &partition, std::nullopt);
//   c10::cuda::CUDAStream stream = tgc::torch_stream(ctx);
//   { c10::cuda::CUDAStreamGuard guard(stream); y = torch::mm(a, b); }  // on ctx's SMs
//
// The stream belongs to the context: keep the context (the shared_ptr) alive while the stream
// is in use. Create the primary context (any CUDA tensor) before the first green context.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include <memory>

#include "torch_green_contexts.h"

namespace tgc {

// A stream of `context` at `priority` (from its pool; see GreenContext::stream) for PyTorch.
inline c10::cuda::CUDAStream torch_stream(const std::shared_ptr<GreenContext>& context, int priority = 0) {
  return c10::cuda::getStreamFromExternal(reinterpret_cast<cudaStream_t>(context->stream(priority)),
                                          static_cast<c10::DeviceIndex>(context->device()));
}

}  // namespace tgc
