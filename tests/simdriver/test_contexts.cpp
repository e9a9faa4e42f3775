// Green contexts one at a time: creation, streams, the current context, the probe, and
// contexts made from split requests.
#include <algorithm>
#include <set>
#include <vector>

#include "core/sm_probe.h"
#include "sim_fixture.h"

TEST_F(Contexts, CreateStreamsAndDestroy) {
  const int stream_creations = sim().calls("cuStreamCreateWithPriority");
  SmPartition part = partition_with_at_least(0, 10);
  EXPECT_EQ(part.sm_count(), 16u);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(ctx->sm_count(), 16u);
  EXPECT_EQ(sms_of(*ctx).size(), 16u);
  EXPECT_EQ(green_ctxs_alive(), 1);
  cu::CUstream a = ctx->stream(0);
  cu::CUstream b = ctx->stream(-1);
  EXPECT_NE(a, b);
  EXPECT_EQ(ctx->stream_count(), 2u);
  EXPECT_EQ(streams_alive(), 2);
  if (version() < 12050) {
    EXPECT_EQ(sim().calls("cuStreamCreateWithPriority") - stream_creations, 2);
  }
  SmPartition own = GreenContext::sm_partition(ctx);
  EXPECT_TRUE(own.splittable());
  EXPECT_EQ(own.sm_count(), 16u);
  std::weak_ptr<GreenContext> weak = ctx;
  ctx.reset();
  EXPECT_FALSE(weak.expired()) << "the partition keeps its context alive";
  auto again = GreenContext::create(0, &own, std::nullopt);
  EXPECT_EQ(sms_of(*again), sms_of(*weak.lock()));
  again.reset();
  own = SmPartition::from_device(0);
  EXPECT_TRUE(weak.expired());
}

TEST_F(Contexts, WholeDeviceAndRoundUp) {
  EXPECT_EQ(partition_with_at_least(0, 132).sm_count(), 132u);
  EXPECT_EQ(partition_with_at_least(0, 1).sm_count(), 8u);
  EXPECT_THROW(partition_with_at_least(0, 0), std::runtime_error);
  EXPECT_THROW(partition_with_at_least(0, 133), std::runtime_error);
  auto whole = GreenContext::create(0, nullptr, std::nullopt);
  EXPECT_EQ(whole->sm_count(), 132u);
}

TEST_F(Contexts, PushPopAndProbe) {
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  auto part = partition_with_at_least(0, 16);
  auto small = GreenContext::create(0, &part, std::nullopt);
  EXPECT_THROW(small->pop_current(), std::runtime_error);
  EXPECT_EQ(current_context(), nullptr);
  small->push_current();
  EXPECT_EQ(current_context(), small->context());
  EXPECT_THROW(ctx->pop_current(), std::runtime_error);
  small->pop_current();
  EXPECT_EQ(current_context(), nullptr);
  cu::CUstream stream = small->stream(0);
  std::vector<unsigned> ids(64, 999);
  launch_sm_probe(stream, reinterpret_cast<cu::CUdeviceptr>(ids.data()), 64, 128, 0);
  std::set<int> seen(ids.begin(), ids.end());
  std::vector<int> expected = sms_of(*small);
  EXPECT_EQ(std::vector<int>(seen.begin(), seen.end()), expected);
}

TEST_F(Contexts, StreamsComeFromABoundedPoolPerPriority) {
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  const std::size_t pool = GreenContext::kStreamsPerPriority;
  std::vector<cu::CUstream> first;
  for (std::size_t i = 0; i < pool; ++i) first.push_back(ctx->stream(0));
  EXPECT_EQ(std::set<cu::CUstream>(first.begin(), first.end()).size(), pool);
  for (std::size_t i = 0; i < 2 * pool; ++i) EXPECT_EQ(ctx->stream(0), first[i % pool]) << i;
  EXPECT_EQ(ctx->stream_count(), pool);
  cu::CUstream high = ctx->stream(-1);
  EXPECT_EQ(std::count(first.begin(), first.end(), high), 0);
  EXPECT_EQ(ctx->stream_count(), pool + 1);
  EXPECT_EQ(streams_alive(), static_cast<int>(pool + 1));
  EXPECT_EQ(live_counts().streams, pool + 1);
  ctx.reset();
  EXPECT_EQ(streams_alive(), 0);
  EXPECT_EQ(live_counts().streams, 0u);
}

TEST_F(Contexts, OwnedStreamsMoveAndAreDestroyedOnce) {
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  auto make = [&ctx] {
    cu::CUstream stream = nullptr;
    ctx->push_current();
    EXPECT_EQ(driver().cuStreamCreateWithPriority(&stream, cu::CU_STREAM_NON_BLOCKING, 0), cu::CUDA_SUCCESS);
    ctx->pop_current();
    return stream;
  };
  const int before = streams_alive();
  OwnedStream a(make()), b(make());
  const cu::CUstream second = b.get();
  EXPECT_EQ(streams_alive(), before + 2);
  int waits = sim().calls("cuStreamSynchronize");
  a = std::move(b);  // a's own stream is waited for and destroyed
  EXPECT_EQ(a.get(), second);
  EXPECT_EQ(b.get(), nullptr);
  EXPECT_EQ(streams_alive(), before + 1);
  EXPECT_EQ(sim().calls("cuStreamSynchronize"), waits + 1);
  OwnedStream& same = a;
  a = std::move(same);  // moving onto itself keeps the stream
  EXPECT_EQ(a.get(), second);
  OwnedStream c(std::move(a));
  EXPECT_EQ(c.get(), second);
  EXPECT_EQ(a.get(), nullptr);
  waits = sim().calls("cuStreamSynchronize");
  c.destroy(false);  // its work known to be done: no wait
  EXPECT_EQ(sim().calls("cuStreamSynchronize"), waits);
  EXPECT_EQ(c.get(), nullptr);
  EXPECT_EQ(streams_alive(), before);
  const int destroys = sim().calls("cuStreamDestroy");
  c.destroy();  // nothing left to destroy
  EXPECT_EQ(sim().calls("cuStreamDestroy"), destroys);
}

TEST_F(Contexts, ACurrentContextIsPushedForItsScope) {
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  {
    CurrentContext current(ctx->context());
    EXPECT_EQ(tgc::current_context(), ctx->context());
  }
  EXPECT_EQ(tgc::current_context(), nullptr) << "popped when the guard went";
  {
    CurrentContext current(ctx->context());
    current.pop();
    EXPECT_EQ(tgc::current_context(), nullptr);
    const int pops = sim().calls("cuCtxPopCurrent");
    current.pop();  // once only
    EXPECT_EQ(sim().calls("cuCtxPopCurrent"), pops);
  }
  sim().fail_next("cuCtxPushCurrent", 999, 0);
  EXPECT_THROW(CurrentContext{ctx->context()}, DriverError);
  const int pops = sim().calls("cuCtxPopCurrent");
  EXPECT_EQ(sim().calls("cuCtxPopCurrent"), pops) << "nothing pushed, nothing popped";
  // A pop refused on the way out is a warning, never an exception.
  CapturedWarnings warnings;
  {
    CurrentContext current(ctx->context());
    sim().fail_next("cuCtxPopCurrent", 999, 0);
  }
  warnings.stop();
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_CONTAINS(warnings.messages[0], "cuCtxPopCurrent");
  if (tgc::current_context() != nullptr) {  // the refused pop left it current
    cu::CUcontext popped = nullptr;
    driver().cuCtxPopCurrent(&popped);
  }
  // pop() reports a refusal as the driver's error.
  CurrentContext current(ctx->context());
  sim().fail_next("cuCtxPopCurrent", 999, 0);
  EXPECT_THROW(current.pop(), DriverError);
  cu::CUcontext popped = nullptr;
  driver().cuCtxPopCurrent(&popped);
}

TEST_F(Contexts, CreateSplitGoesFromRequestsToDisjointContexts) {
  for (SplitPath path : {SplitPath::kAuto, SplitPath::kEmulated}) {
    auto made = GreenContext::create_split(0, {group(16), group(0, 0, true)}, std::nullopt, path);
    ASSERT_EQ(made.size(), 2u);
    EXPECT_EQ(made[0]->sm_count(), 16u);
    EXPECT_EQ(made[1]->sm_count(), 116u);
    for (const auto& ctx : made) EXPECT_EQ(ctx->device(), 0);
    expect_disjoint(made);
    EXPECT_EQ(live_counts().contexts, 2u);
  }
  EXPECT_EQ(live_counts().contexts, 0u);
  // A request the rules refuse fails before anything is made.
  const int creates = sim().calls("cuGreenCtxCreate");
  EXPECT_THROW(GreenContext::create_split(0, {group(0, 0, true), group(16)}, std::nullopt), ValueError);
  EXPECT_THROW(GreenContext::create_split(0, {group(200)}, std::nullopt), ValueError);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates);
  // Workqueue options the driver lacks fail before the device is split.
  WorkqueueConfig wq;
  wq.scope = cu::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  if (version() < 13010) {
    const int splits = sim().calls("cuDevSmResourceSplitByCount");
    EXPECT_THROW(GreenContext::create_split(0, {group(16), group(16)}, wq), FeatureUnavailableError);
    EXPECT_EQ(sim().calls("cuDevSmResourceSplitByCount"), splits);
  } else {
    auto made = GreenContext::create_split(0, {group(16), group(24)}, wq);
    int scope = -2, limit = -2;
    sim().ctx_workqueue(made[1]->handle(), &scope, &limit);
    EXPECT_EQ(scope, 1);
  }
  EXPECT_EQ(live_counts().contexts + live_counts().internal_contexts, 0u);
}

TEST_F(Contexts, ARequestNamesAPartitionOrACountAndItsDevice) {
  std::vector<int> prepared;
  const GreenContext::Host host{[] { return 0; }, [&](int device) { prepared.push_back(device); }};
  GreenContext::Request by_count;
  by_count.sms = GreenContext::AtLeast{10};
  EXPECT_EQ(GreenContext::device_of(by_count, host), 0);
  EXPECT_EQ(GreenContext::create(by_count, host)->sm_count(), 16u) << "at least 10 SMs: the driver's next unit";
  EXPECT_EQ(prepared, std::vector<int>{0});  // the host prepares the device before a context is made
  SmPartition part = partition_with_at_least(0, 24);
  GreenContext::Request by_partition;
  by_partition.sms = &part;
  by_partition.device = 0;
  EXPECT_EQ(GreenContext::device_of(by_partition, host), 0);
  EXPECT_EQ(GreenContext::create(by_partition, host)->sm_count(), 24u);
  by_partition.device = 1;
  EXPECT_THROWS_WITH(GreenContext::create(by_partition, host), ValueError,
                     "device_id=1 disagrees with the sm_partition's device (0); omit device_id or pass device_id=0");
  GreenContext::Request elsewhere;
  elsewhere.device = 5;
  EXPECT_THROW(GreenContext::device_of(elsewhere, host), RangeError);
  EXPECT_THROWS_WITH(GreenContext::create(GreenContext::Request{}), ValueError, "no device given");
  // A count below 1 with the device's figures; for a device that is not there, without them,
  // before the device's absence (which a count the device must judge meets first).
  GreenContext::Request none;
  none.sms = GreenContext::AtLeast{0};
  EXPECT_THROWS_WITH(GreenContext::create(none, host), RangeError,
                     "num_sms must be between 1 and 132 (the SM count of device 0), got 0");
  none.device = 5;
  EXPECT_THROWS_WITH(GreenContext::create(none, host), RangeError,
                     "num_sms must be between 1 and the SM count of the device, got 0");
  none.sms = GreenContext::AtLeast{8};
  EXPECT_THROWS_WITH(GreenContext::create(none, host), RangeError, "device_id 5 is out of range");
  EXPECT_EQ(std::count(prepared.begin(), prepared.end(), 5), 0);
}
