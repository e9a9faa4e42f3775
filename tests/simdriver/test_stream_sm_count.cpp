// The SM count behind a stream: green streams looked up, plain and default streams the
// device's or the current context's, and other libraries' green contexts asked of the driver.
#include <cstdint>
#include <memory>

#include "sim_fixture.h"

namespace {

// A stream made while `context` is current: a regular context's, or a green context's.
cu::CUstream stream_in(cu::CUcontext context) {
  EXPECT_EQ(driver().cuCtxPushCurrent(context), cu::CUDA_SUCCESS);
  cu::CUstream stream = nullptr;
  EXPECT_EQ(driver().cuStreamCreateWithPriority(&stream, cu::CU_STREAM_NON_BLOCKING, 0), cu::CUDA_SUCCESS);
  cu::CUcontext popped = nullptr;
  EXPECT_EQ(driver().cuCtxPopCurrent(&popped), cu::CUDA_SUCCESS);
  return stream;
}
}  // namespace

TEST_F(StreamSmCount, GreenStreamsAreLookedUpPlainStreamsHaveTheDevice) {
  ContextRecycler::instance().set_limit(2);
  SmPartition part = partition_with_at_least(0, 16);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(remembered_green_contexts(), 1u);
  cu::CUstream green = ctx->stream(0);
  const int resource_queries = sim().calls("cuGreenCtxGetDevResource");
  EXPECT_EQ(stream_sm_count(green, 0), 16u);
  EXPECT_EQ(stream_sm_count(ctx->stream(-1), 0), 16u);
  EXPECT_EQ(sim().calls("cuGreenCtxGetDevResource"), resource_queries) << "ours are looked up, not asked";

  int regular_tag = 0;
  cu::CUstream plain = stream_in(reinterpret_cast<cu::CUcontext>(&regular_tag));
  EXPECT_EQ(stream_sm_count(plain, 0), 132u);
  const int attribute_queries = sim().calls("cuDeviceGetAttribute");
  EXPECT_EQ(stream_sm_count(plain, 0), 132u);
  EXPECT_EQ(sim().calls("cuDeviceGetAttribute"), attribute_queries) << "the device's count is read once";
  EXPECT_EQ(driver().cuStreamDestroy(plain), cu::CUDA_SUCCESS);

  // A dropped context kept idle is still remembered; a destroyed one is forgotten.
  std::weak_ptr<GreenContext> weak = ctx;
  ctx.reset();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(remembered_green_contexts(), 1u);
  EXPECT_EQ(stream_sm_count(green, 0), 16u);
  ContextRecycler::instance().release_all();
  EXPECT_EQ(remembered_green_contexts(), 0u);
}

TEST_F(StreamSmCount, TheDefaultStreamIsTheCurrentContexts) {
  SmPartition part = partition_with_at_least(0, 24);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  const int asked = sim().calls("cuStreamGetGreenCtx");
  EXPECT_EQ(stream_sm_count(nullptr, 0), 132u) << "none current: the runtime makes the primary context current";
  EXPECT_EQ(sim().calls("cuStreamGetGreenCtx"), asked) << "nothing to ask the driver";
  ctx->push_current();
  for (std::uintptr_t special : {std::uintptr_t{0}, cu::CU_STREAM_LEGACY_HANDLE, cu::CU_STREAM_PER_THREAD_HANDLE}) {
    EXPECT_EQ(stream_sm_count(reinterpret_cast<cu::CUstream>(special), 0), 24u) << special;
  }
  ctx->pop_current();
  int regular_tag = 0;
  ASSERT_EQ(driver().cuCtxPushCurrent(reinterpret_cast<cu::CUcontext>(&regular_tag)), cu::CUDA_SUCCESS);
  EXPECT_EQ(stream_sm_count(nullptr, 0), 132u);
  cu::CUcontext popped = nullptr;
  ASSERT_EQ(driver().cuCtxPopCurrent(&popped), cu::CUDA_SUCCESS);
}

TEST_F(StreamSmCount, GreenContextsMadeByOthersAreAskedOfTheDriver) {
  SplitResult parts = split(SmPartition::from_device(0), {group(24)});
  cu::CUdevResource resource = parts.groups.at(0).resource();
  cu::CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(driver().cuDevResourceGenerateDesc(&desc, &resource, 1), cu::CUDA_SUCCESS);
  cu::CUgreenCtx foreign = nullptr;
  ASSERT_EQ(driver().cuGreenCtxCreate(&foreign, desc, 0, cu::CU_GREEN_CTX_DEFAULT_STREAM), cu::CUDA_SUCCESS);
  cu::CUcontext context = nullptr;
  ASSERT_EQ(driver().cuCtxFromGreenCtx(&context, foreign), cu::CUDA_SUCCESS);
  cu::CUstream stream = stream_in(context);
  const int resource_queries = sim().calls("cuGreenCtxGetDevResource");
  EXPECT_EQ(stream_sm_count(stream, 0), 24u);
  EXPECT_EQ(stream_sm_count(stream, 0), 24u);
  EXPECT_EQ(sim().calls("cuGreenCtxGetDevResource"), resource_queries + 2) << "never cached: its lifetime is not ours";
  EXPECT_EQ(remembered_green_contexts(), 0u);
  sim().fail_next("cuGreenCtxGetDevResource", 999, 0);
  EXPECT_THROWS_THAT(stream_sm_count(stream, 0), DriverError, [&](const DriverError& e) {
    EXPECT_EQ(e.call(), "cuGreenCtxGetDevResource");
    EXPECT_EQ(e.name(), "CUDA_ERROR_UNKNOWN");
    EXPECT_EQ(e.code(), 999);
  });
  EXPECT_EQ(driver().cuStreamDestroy(stream), cu::CUDA_SUCCESS);
  EXPECT_EQ(driver().cuGreenCtxDestroy(foreign), cu::CUDA_SUCCESS);
}
