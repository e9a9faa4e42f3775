// torch_green_contexts for C++: green contexts, SM partitions and their splits, without Python.
//
// The driver-facing core needs no PyTorch: link TorchGreenContexts::core. For streams as
// c10::cuda::CUDAStream in a LibTorch program, include <torch_green_contexts/torch.h> as well
// and link TorchGreenContexts::torch.
//
//   tgc::SmPartition whole = tgc::SmPartition::from_device(0);
//   tgc::SplitResult parts = tgc::split(whole, {tgc::group(16), tgc::group(0, 0, true)});
//   auto contexts = tgc::GreenContext::create_all(0, {&parts.groups[0], &parts.groups[1]}, {});
//
// Errors are exceptions, one type per condition: tgc::ValueError and tgc::TypeError
// (std::invalid_argument) for bad requests, tgc::SplitError (a ValueError: the SMs cannot give a
// group; the group, the count and the nearest counts), tgc::RangeError (a device or count the
// machine lacks), tgc::DriverUnavailableError (no usable driver), tgc::DriverError (naming the
// driver call, CUresult name and text) and tgc::FeatureUnavailableError (the feature, the driver
// version it needs and the one found), all std::runtime_error but the first three. Objects are
// held by std::shared_ptr: a partition keeps the context it came from alive, a context keeps its
// streams.
#pragma once

#include "core/idle_contexts.h"
#include "core/current_context.h"
#include "core/device.h"
#include "core/driver_info.h"
#include "core/errors.h"
#include "core/green_context.h"
#include "core/sm_partition.h"
#include "core/sm_probe.h"
#include "core/split.h"
#include "core/stream_fence.h"
#include "core/stream_sm_count.h"
#include "core/warnings.h"

namespace tgc {

// One group of a split request: `sm_count` SMs (0: the largest that fits), with the
// co-scheduling options and backfill of SMPartition.split.
inline GroupRequest group(unsigned sm_count, unsigned coscheduled_sm_count = 0, bool backfill = false,
                          unsigned preferred_coscheduled_sm_count = 0) {
  GroupRequest request;
  request.sm_count = sm_count;
  request.coscheduled_sm_count = coscheduled_sm_count;
  request.backfill = backfill;
  request.preferred_coscheduled_sm_count = preferred_coscheduled_sm_count;
  return request;
}

}  // namespace tgc
