// Driver calls that fail: the error names the call, cleanup failures only warn, and nothing
// is left behind, in the core, the benchmarks' raw baselines and the probe.
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "bench/driver_baseline.h"
#include "core/sm_probe.h"
#include "sim_fixture.h"

TEST_F(Faults, FailedCreationNamesTheCallAndLeavesNothing) {
  SmPartition part = partition_with_at_least(0, 16);
  for (const char* call : {"cuDevResourceGenerateDesc", "cuGreenCtxCreate", "cuCtxFromGreenCtx",
                           "cuGreenCtxGetDevResource", "cuDeviceGetDevResource"}) {
    SCOPED_TRACE(call);
    const SmPartition* from = std::string(call) == "cuDeviceGetDevResource" ? nullptr : &part;
    sim().fail_next(call, 999, 0);
    EXPECT_THROWS_THAT(GreenContext::create(0, from, std::nullopt), DriverError, [&](const DriverError& e) {
      EXPECT_EQ(e.call(), call);
      EXPECT_CONTAINS(e.what(), "CUDA_ERROR_UNKNOWN");
    });
    EXPECT_EQ(green_ctxs_alive(), 0) << call;
  }
  auto ctx = GreenContext::create(0, &part, std::nullopt);  // still works afterwards
  EXPECT_EQ(ctx->sm_count(), 16u);
}

TEST_F(Faults, FailedStreamCreationKeepsTheContextUsable) {
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  const char* call = version() >= 12050 ? "cuGreenCtxStreamCreate" : "cuStreamCreateWithPriority";
  sim().fail_next(call, 2, 0);
  EXPECT_THROW(ctx->stream(0), DriverError);
  EXPECT_EQ(ctx->stream_count(), 0u);
  ctx->stream(0);
  EXPECT_EQ(ctx->stream_count(), 1u);
}

TEST_F(Faults, FailuresInsideAnEmulatedSplitReleaseInternalContexts) {
  SmPartition whole = SmPartition::from_device(0);
  for (const char* call : {"cuDevSmResourceSplitByCount", "cuGreenCtxCreate", "cuGreenCtxGetDevResource"}) {
    SCOPED_TRACE(call);
    sim().fail_next(call, 999, 1);
    EXPECT_DRIVER_ERROR(split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated), call);
    sim().clear_failures();
    EXPECT_EQ(live_counts().internal_contexts, 0u) << call;
    EXPECT_EQ(green_ctxs_alive(), 0) << call;
  }
}

TEST_F(Faults, CleanupFailuresWarnAndNeverThrow) {
  CapturedWarnings warnings;
  {
    auto ctx = GreenContext::create(0, nullptr, std::nullopt);
    ctx->stream(0);
    sim().fail_next("cuStreamSynchronize", 999, 0);
  }
  warnings.stop();
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_CONTAINS(warnings.messages[0], "cuStreamSynchronize");
  EXPECT_EQ(streams_alive(), 0) << "the stream is destroyed all the same";
}

TEST_F(Faults, StreamPoolsWarnOutsideTheirLock) {
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  StreamPools pools;
  auto create = [&ctx](int priority) {
    cu::CUstream stream = nullptr;
    ctx->push_current();
    EXPECT_EQ(driver().cuStreamCreateWithPriority(&stream, cu::CU_STREAM_NON_BLOCKING, priority), cu::CUDA_SUCCESS);
    ctx->pop_current();
    return OwnedStream(stream);
  };
  bool created = false;
  pools.next(0, create, &created);
  ASSERT_TRUE(created);
  // A handler that waits for another thread asking the pools for something, as the Python
  // handler waits for the GIL a thread asking for a stream may hold: the lock must be free.
  std::vector<bool> lock_free;
  std::vector<std::future<std::size_t>> others;
  WarningHandler previous = set_warning_handler([&](const std::string&) {
    others.push_back(std::async(std::launch::async, [&pools] { return pools.count(); }));
    lock_free.push_back(others.back().wait_for(std::chrono::seconds(2)) == std::future_status::ready);
  });
  sim().fail_next("cuStreamSynchronize", 999, 0);
  EXPECT_FALSE(pools.synchronize());
  EXPECT_TRUE(pools.synchronize());
  sim().fail_next("cuStreamSynchronize", 999, 0);
  pools.destroy(true);
  set_warning_handler(previous);
  for (auto& other : others) other.wait();
  EXPECT_EQ(lock_free, (std::vector<bool>{true, true}));
  EXPECT_EQ(pools.count(), 0u);
  EXPECT_EQ(streams_alive(), 0) << "destroyed although its wait failed";
}

TEST_F(Faults, BenchmarkBaselinesDestroyWhatTheyMadeWhenALaterCallFails) {
  bench::Timing ok = bench::raw_create(0, 16);
  EXPECT_GT(ok.create_ns, 0);
  ok = bench::raw_split_create(0, 16, true);
  EXPECT_GE(ok.create_ns, ok.split_ns);
  EXPECT_EQ(green_ctxs_alive(), 0);
  struct Case {
    const char* call;
    int skip;
    bool split, concurrently;
  };
  for (const Case& c : {Case{"cuCtxFromGreenCtx", 0, false, false},
                        Case{"cuGreenCtxGetDevResource", 0, false, false},
                        Case{"cuGreenCtxCreate", 1, true, false},          // the second of two
                        Case{"cuGreenCtxGetDevResource", 1, true, false},
                        Case{"cuGreenCtxCreate", 0, true, true},           // one of the two threads
                        Case{"cuGreenCtxGetDevResource", 1, true, true},
                        Case{"cuCtxFromGreenCtx", 0, true, true}}) {
    SCOPED_TRACE(std::string(c.call) + (c.split ? " in raw_split_create" : " in raw_create") +
                 (c.concurrently ? ", concurrently" : ""));
    sim().fail_next(c.call, 999, c.skip);
    EXPECT_DRIVER_ERROR(c.split ? bench::raw_split_create(0, 16, c.concurrently) : bench::raw_create(0, 16), c.call);
    sim().clear_failures();
    EXPECT_EQ(green_ctxs_alive(), 0);
  }
  // The first of two destroys refused: the second context is destroyed all the same.
  sim().fail_next("cuGreenCtxDestroy", 999, 0);
  EXPECT_THROW(bench::raw_split_create(0, 16, false), DriverError);
  EXPECT_EQ(green_ctxs_alive(), 1) << "only the context whose destroy was refused";
  leaked_by_failed_destroys_.green_ctx += 1;
  EXPECT_EQ(sim().misuse(), 0);
  if (version() >= 12050) {
    auto ctx = GreenContext::create(0, nullptr, std::nullopt);
    const int streams = streams_alive();
    bench::raw_stream_create(reinterpret_cast<std::uintptr_t>(ctx->handle()), 0);
    EXPECT_EQ(streams_alive(), streams);
  }
}

TEST_F(Faults, ProbeLoadFailureIsReported) {
  // the probe library loads once per process; a failed launch names the call
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream stream = ctx->stream(0);
  std::vector<unsigned> ids(8);
  sim().fail_next("cuLaunchKernel", 2, 0);
  EXPECT_DRIVER_ERROR(launch_sm_probe(stream, reinterpret_cast<cu::CUdeviceptr>(ids.data()), 8, 32, 0),
                      "cuLaunchKernel");
  cu::CUcontext current = nullptr;
  driver().cuCtxGetCurrent(&current);
  EXPECT_EQ(current, nullptr) << "the probe pops the context it pushed";
}

