// The core against the simulated driver, once per driver version (ctest runs this binary
// with TGC_SIM_DRIVER_VERSION set to each of 12040, 12050, 13000, 13010, 13040).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/driver_baseline.h"

#include "core/context_recycler.h"
#include "core/current_context.h"
#include "core/device.h"
#include "core/driver_api.h"
#include "core/errors.h"
#include "core/green_context.h"
#include "core/sm_partition.h"
#include "core/sm_probe.h"
#include "core/split.h"
#include "core/stream_fence.h"
#include "core/stream_sm_count.h"
#include "group_request.h"
#include "core/warnings.h"

using namespace tgc;
using tgc::testing::group;
namespace cu = tgc::abi;

// Threads started in this process, counted by wrapping pthread_create (std::thread's way in);
// when g_threads_allowed is not negative, only that many more start (then EAGAIN).
std::atomic<int> g_threads_started{0};
std::atomic<int> g_threads_allowed{-1};

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) noexcept {
  using Fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_create"));
  int allowed = g_threads_allowed.load();
  while (allowed >= 0) {
    if (allowed == 0) return EAGAIN;
    if (g_threads_allowed.compare_exchange_weak(allowed, allowed - 1)) break;
  }
  g_threads_started.fetch_add(1);
  return real(thread, attr, start, arg);
}

// A forked child ends with _Exit (no exit handlers); in a coverage build it writes its line
// counts first.
#ifdef TGC_COVERAGE_BUILD
extern "C" void __gcov_dump(void);
#endif

[[noreturn]] void child_exit(int code) {
#ifdef TGC_COVERAGE_BUILD
  __gcov_dump();
#endif
  std::_Exit(code);
}

namespace tgc {
// Holds the recycler's lock, as a thread inside the recycler does, for the fork test.
struct ContextRecyclerTestAccess {
  static std::mutex& mutex() { return ContextRecycler::instance().mutex_; }
};
}  // namespace tgc

namespace {

struct Sim {
  int (*live)(const char*);
  int (*misuse)();
  void (*fail_next)(const char*, int, int);
  void (*clear_failures)();
  int (*calls)(const char*);
  int (*ctx_sms)(void*, int*, int);
  int (*last_params)(unsigned*, int);
  int (*ctx_workqueue)(void*, int*, int*);
  int (*live_events)(void**, unsigned*, int);
  int (*wait_edges)(void**, void**, int);
  void (*clear_wait_edges)();
};

const Sim& sim() {
  static Sim s = [] {
    const char* path = std::getenv(driver_library_env());
    void* lib = dlopen(path, RTLD_NOW);
    if (lib == nullptr) std::abort();
    Sim out;
    out.live = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "tgc_sim_live"));
    out.misuse = reinterpret_cast<int (*)()>(dlsym(lib, "tgc_sim_misuse_count"));
    out.fail_next = reinterpret_cast<void (*)(const char*, int, int)>(dlsym(lib, "tgc_sim_fail_next"));
    out.clear_failures = reinterpret_cast<void (*)()>(dlsym(lib, "tgc_sim_clear_failures"));
    out.calls = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "tgc_sim_calls"));
    out.ctx_sms = reinterpret_cast<int (*)(void*, int*, int)>(dlsym(lib, "tgc_sim_green_ctx_sms"));
    out.last_params = reinterpret_cast<int (*)(unsigned*, int)>(dlsym(lib, "tgc_sim_last_split_params"));
    out.ctx_workqueue = reinterpret_cast<int (*)(void*, int*, int*)>(dlsym(lib, "tgc_sim_green_ctx_workqueue"));
    out.live_events = reinterpret_cast<int (*)(void**, unsigned*, int)>(dlsym(lib, "tgc_sim_live_events"));
    out.wait_edges = reinterpret_cast<int (*)(void**, void**, int)>(dlsym(lib, "tgc_sim_wait_edges"));
    out.clear_wait_edges = reinterpret_cast<void (*)()>(dlsym(lib, "tgc_sim_clear_wait_edges"));
    return out;
  }();
  return s;
}

int version() { return std::atoi(std::getenv("TGC_SIM_DRIVER_VERSION")); }

std::vector<int> sms_of(const GreenContext& ctx) {
  std::vector<int> out(256);
  int n = sim().ctx_sms(ctx.handle(), out.data(), 256);
  out.resize(static_cast<std::size_t>(n));
  return out;
}


// Makes a context of every group and checks sizes and pairwise disjointness in the driver.
std::vector<std::shared_ptr<GreenContext>> contexts_of(const SplitResult& result,
                                                       const std::vector<unsigned>& sizes) {
  std::vector<std::shared_ptr<GreenContext>> contexts;
  std::set<int> seen;
  EXPECT_EQ(result.groups.size(), sizes.size());
  for (std::size_t i = 0; i < result.groups.size(); ++i) {
    EXPECT_EQ(result.groups[i].sm_count(), sizes[i]) << "group " << i;
    contexts.push_back(GreenContext::create(0, &result.groups[i], std::nullopt));
    EXPECT_EQ(contexts.back()->sm_count(), sizes[i]);
    for (int sm : sms_of(*contexts.back())) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
  }
  return contexts;
}

class Sim_ : public ::testing::Test {
 protected:
  // Contexts are destroyed when dropped unless a test turns recycling on.
  void SetUp() override {
    sim().clear_failures();
    ContextRecycler::instance().set_limit(0);
    green_at_start_ = sim().live("green_ctx");
    streams_at_start_ = sim().live("stream");
    events_at_start_ = sim().live("event");
  }
  void TearDown() override {
    sim().clear_failures();
    ContextRecycler::instance().release_all();
    ContextRecycler::instance().set_limit(0);
    LiveCounts live = live_counts();
    EXPECT_EQ(live.idle_contexts, 0u);
    EXPECT_EQ(live.idle_streams, 0u);
    EXPECT_EQ(live.contexts, 0u);
    EXPECT_EQ(live.internal_contexts, 0u);
    EXPECT_EQ(live.streams, 0u);
    EXPECT_EQ(sim().live("green_ctx"), green_at_start_ + leaked_by_failed_destroys_.green_ctx)
        << "a green context leaked";
    EXPECT_EQ(sim().live("stream"), streams_at_start_ + leaked_by_failed_destroys_.streams) << "a stream leaked";
    EXPECT_EQ(live_fence_events(), 0u);
    EXPECT_EQ(sim().live("event"), events_at_start_ + leaked_by_failed_destroys_.events) << "an event leaked";
    EXPECT_EQ(sim().misuse(), 0) << "a handle was used after it was destroyed";
    EXPECT_EQ(remembered_green_contexts(), 0u) << "a destroyed context's SM count is still remembered";
  }
  int green_at_start_ = 0, streams_at_start_ = 0, events_at_start_ = 0;
  // A destroy the driver refuses cannot be retried: its handle stays alive in the simulation.
  struct {
    int green_ctx = 0;
    int streams = 0;
    int events = 0;
  } leaked_by_failed_destroys_;
};

using DriverTable = Sim_;
using Contexts = Sim_;
using Gates = Sim_;
using NativeSplit = Sim_;
using EmulatedSplit = Sim_;
using Faults = Sim_;

}  // namespace

TEST_F(DriverTable, VersionAndEntryPointsFollowTheDriver) {
  EXPECT_EQ(driver().version(), version());
  EXPECT_EQ(driver().cuGreenCtxStreamCreate != nullptr, version() >= 12050);
  EXPECT_EQ(driver().cuDevSmResourceSplit != nullptr, version() >= 13010);
  EXPECT_NE(driver().cuGreenCtxCreate, nullptr);
  EXPECT_EQ(installed_driver_version(), version());
  EXPECT_EQ(native_split_available_path() == SplitPath::kNative, version() >= 13010);
}

TEST_F(DriverTable, DeviceQueries) {
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(device_sm_count(0), 132);
  EXPECT_EQ(device_compute_capability(0).major, 9);
  EXPECT_TRUE(primary_context_active(0));
  try {
    device_handle(3);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("valid device_id: 0..0"), std::string::npos);
  }
  for (long long bad : {0LL, -5LL, 133LL, 1LL << 40}) {
    try {
      partition_with_at_least(0, bad);
      FAIL() << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()),
                "num_sms must be between 1 and 132 (the SM count of device 0), got " + std::to_string(bad));
    }
  }
  SmPartition whole = SmPartition::from_device(0);
  EXPECT_EQ(whole.sm_count(), 132u);
  EXPECT_EQ(whole.coscheduled_sm_count(), 8u);
  EXPECT_EQ(whole.min_partition_size(), version() >= 13000 ? 8u : 0u);
  EXPECT_TRUE(whole.splittable());
  EXPECT_TRUE(driver_initialized());
  if (version() >= 13040) {
    EXPECT_EQ(device_locality_domain_count(0), 2);
  } else {
    try {
      device_locality_domain_count(0);
      FAIL() << "no error below 13.4";
    } catch (const FeatureUnavailableError& e) {
      EXPECT_NE(std::string(e.what()).find("locality domains needs CUDA driver 13.4"), std::string::npos) << e.what();
    }
  }
}

TEST_F(Contexts, CreateStreamsAndDestroy) {
  SmPartition part = partition_with_at_least(0, 10);
  EXPECT_EQ(part.sm_count(), 16u);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(ctx->sm_count(), 16u);
  EXPECT_EQ(sms_of(*ctx).size(), 16u);
  EXPECT_EQ(sim().live("green_ctx"), 1);
  cu::CUstream a = ctx->stream(0);
  cu::CUstream b = ctx->stream(-1);
  EXPECT_NE(a, b);
  EXPECT_EQ(ctx->stream_count(), 2u);
  EXPECT_EQ(sim().live("stream"), 2);
  if (version() < 12050) {
    EXPECT_EQ(sim().calls("cuStreamCreateWithPriority"), 2);
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

TEST_F(Gates, FeaturesBelowTheirVersionSayWhatTheyNeed) {
  WorkqueueConfig wq;
  wq.scope = cu::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest local = group(16);
  local.locality_domain_id = 0;
  if (version() < 13010) {
    EXPECT_THROW(GreenContext::create(0, nullptr, wq), FeatureUnavailableError);
    EXPECT_THROW(GreenContext::max_workqueue_concurrency(0), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {group(16)}, SplitPath::kNative), FeatureUnavailableError);
    try {
      GreenContext::max_workqueue_concurrency(0);
    } catch (const FeatureUnavailableError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("13.1"), std::string::npos);
      EXPECT_NE(m.find(format_driver_version(version())), std::string::npos);
    }
  }
  if (version() < 13040) {
    EXPECT_THROW(whole.locality_domain_id(), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {local}), FeatureUnavailableError);
    EXPECT_THROW(split(whole, {local}, SplitPath::kEmulated), FeatureUnavailableError);
  } else {
    EXPECT_FALSE(whole.locality_domain_id().has_value());
  }
}

TEST_F(Gates, WorkqueueOptionsReachTheDescriptor) {
  if (version() < 13010) GTEST_SKIP() << "workqueues need 13.1";
  EXPECT_EQ(GreenContext::max_workqueue_concurrency(0), 128u);
  WorkqueueConfig wq;
  wq.scope = cu::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED;
  wq.concurrency_limit = 4;
  SmPartition part = partition_with_at_least(0, 16);
  auto ctx = GreenContext::create(0, &part, wq);
  int scope = -2, limit = -2;
  sim().ctx_workqueue(ctx->handle(), &scope, &limit);
  EXPECT_EQ(scope, 1);
  EXPECT_EQ(limit, 4);
  WorkqueueConfig shared;
  auto whole = GreenContext::create(0, nullptr, shared);
  sim().ctx_workqueue(whole->handle(), &scope, &limit);
  EXPECT_EQ(scope, 0);
  EXPECT_EQ(limit, 128);
  EXPECT_EQ(whole->sm_count(), 132u);
  WorkqueueConfig too_many;
  too_many.concurrency_limit = 100000;
  EXPECT_THROW(GreenContext::create(0, nullptr, too_many), DriverError);
}

TEST_F(NativeSplit, PassesGroupParametersExactly) {
  if (version() < 13010) GTEST_SKIP() << "native split needs 13.1";
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest a = group(16, 4);
  a.preferred_coscheduled_sm_count = 8;
  GroupRequest b = group(24, 8, true);
  GroupRequest c = group(0, 2, true);
  SplitResult result = split(whole, {a, b, c});
  unsigned params[3 * 16];
  ASSERT_EQ(sim().last_params(params, 3), 3);
  EXPECT_EQ(params[0], 16u);
  EXPECT_EQ(params[1], 4u);
  EXPECT_EQ(params[2], 8u);
  EXPECT_EQ(params[3], 0u);
  EXPECT_EQ(params[16 + 0], 24u);
  EXPECT_EQ(params[16 + 3], cu::CU_DEV_SM_RESOURCE_GROUP_BACKFILL);
  EXPECT_EQ(params[32 + 1], 2u);
  EXPECT_EQ(params[32 + 3], cu::CU_DEV_SM_RESOURCE_GROUP_BACKFILL);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(params[i], 0u) << "reserved word " << i;
  EXPECT_FALSE(result.remainder.has_value());
  auto contexts = contexts_of(result, {16, 24, 92});
  EXPECT_FALSE(result.groups[0].splittable());
  EXPECT_THROW(split(result.groups[0], {group(8)}), ValueError);
}

TEST_F(NativeSplit, DiscoveryRemainderAndDriverRules) {
  if (version() < 13010) GTEST_SKIP() << "native split needs 13.1";
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, {group(16), group(0)});
  ASSERT_EQ(result.groups.size(), 2u);
  EXPECT_EQ(result.groups[0].sm_count(), 16u);
  EXPECT_GT(result.groups[1].sm_count(), 0u);
  ASSERT_TRUE(result.remainder.has_value());
  EXPECT_EQ(result.groups[0].sm_count() + result.groups[1].sm_count() + result.remainder->sm_count(), 132u);
  // Not a multiple of the default co-scheduled count: the driver says INVALID_VALUE, and the
  // error says which group, which count and the nearest counts, as on the emulated path.
  const int asked = sim().calls("cuDevSmResourceSplit");
  try {
    split(whole, {group(16), group(12)});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("group 1: num_sms=12 cannot be given exactly"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("nearest counts it can give: 8, 16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sim().calls("cuDevSmResourceSplit"), asked + 1);  // the native path asked the driver first
}

TEST_F(NativeSplit, LocalityDomains) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  SmPartition whole = SmPartition::from_device(0);
  GroupRequest in_one = group(16);
  in_one.locality_domain_id = 1;
  SplitResult result = split(whole, {in_one});
  unsigned params[16];
  ASSERT_EQ(sim().last_params(params, 1), 1);
  EXPECT_EQ(params[3], cu::CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID);
  EXPECT_EQ(params[4], 1u);
  EXPECT_EQ(result.groups[0].locality_domain_id(), std::optional<unsigned>(1));
  auto ctx = GreenContext::create(0, &result.groups[0], std::nullopt);
  EXPECT_EQ(ctx->locality_domain_id(), std::optional<unsigned>(1));
  GroupRequest nowhere = group(16);
  nowhere.locality_domain_id = 7;
  EXPECT_THROW(split(whole, {nowhere}), DriverError);
}

TEST_F(EmulatedSplit, SizesAreExactAndGroupsDisjoint) {
  SmPartition whole = SmPartition::from_device(0);
  {
    SplitResult r = split(whole, {group(16), group(116)}, SplitPath::kEmulated);
    EXPECT_FALSE(r.remainder.has_value());
    auto c = contexts_of(r, {16, 116});
  }
  {
    SplitResult r = split(whole, {group(24), group(40)}, SplitPath::kEmulated);
    ASSERT_TRUE(r.remainder.has_value());
    EXPECT_EQ(r.remainder->sm_count(), 68u);
    auto c = contexts_of(r, {24, 40});
  }
  {
    std::vector<GroupRequest> eights(15, group(8));
    auto c = contexts_of(split(whole, eights, SplitPath::kEmulated), std::vector<unsigned>(15, 8));
  }
  {
    auto c = contexts_of(split(whole, {group(2, 2), group(6, 2), group(10, 2)}, SplitPath::kEmulated), {2, 6, 10});
  }
  {
    auto c = contexts_of(split(whole, {group(16), group(0, 0, true)}, SplitPath::kEmulated), {16, 116});
  }
  {
    SplitResult r = split(whole, {group(0)}, SplitPath::kEmulated);
    ASSERT_EQ(r.groups.size(), 1u);
    EXPECT_EQ(r.groups[0].sm_count() % 8, 0u);
    EXPECT_EQ(r.groups[0].sm_count() + (r.remainder ? r.remainder->sm_count() : 0u), 132u);
  }
  {
    SplitResult r = split(whole, {group(16), group(0)}, SplitPath::kEmulated);
    auto c = contexts_of(r, {16, r.groups[1].sm_count()});
  }
}

TEST_F(EmulatedSplit, ChainsThroughContexts) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult first = split(whole, {group(16)}, SplitPath::kEmulated);
  ASSERT_TRUE(first.remainder.has_value());
  EXPECT_THROW(split(*first.remainder, {group(8)}), ValueError);
  auto rest = GreenContext::create(0, &*first.remainder, std::nullopt);
  SplitResult second = split(GreenContext::sm_partition(rest), {group(8), group(24)}, SplitPath::kEmulated);
  auto a = GreenContext::create(0, &first.groups[0], std::nullopt);
  auto c = contexts_of(second, {8, 24});
  const std::vector<int> a_list = sms_of(*a);
  const std::set<int> a_sms(a_list.begin(), a_list.end());
  EXPECT_EQ(a_sms.size(), 16u);
  for (auto& ctx : c)
    for (int sm : sms_of(*ctx)) EXPECT_FALSE(a_sms.count(sm));
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
  EXPECT_EQ(sim().live("stream"), static_cast<int>(pool + 1));
  EXPECT_EQ(live_counts().streams, pool + 1);
  ctx.reset();
  EXPECT_EQ(sim().live("stream"), 0);
  EXPECT_EQ(live_counts().streams, 0u);
}

TEST_F(Contexts, AForkedChildGetsAClearErrorAndCleansUpNothing) {
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int code = 1;
    try {
      driver();
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("'spawn'") != std::string::npos ? 0 : 2;
    }
    ctx.reset();  // the inherited context: no driver call, no crash
    child_exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NO_THROW(driver());  // the parent is unaffected
  ctx.reset();
}

TEST_F(Contexts, AForkWhileAnotherThreadHoldsTheRecyclerLockDoesNotHangTheChild) {
  ContextRecycler::instance().set_limit(2);
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  std::atomic<bool> held{false};
  std::thread holder([&held] {
    std::lock_guard<std::mutex> lock(ContextRecyclerTestAccess::mutex());
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  while (!held.load()) std::this_thread::yield();
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int code = 0;
    LiveCounts live = live_counts();  // takes the recycler's lock
    if (live.contexts != 1) code = 3;
    try {
      GreenContext::create(0, &part, std::nullopt);
      code = 4;
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("'spawn'") == std::string::npos) code = 5;
    }
    ctx.reset();  // the inherited context: no driver call, uncounted, not kept
    live = live_counts();
    if (live.contexts != 0 || live.idle_contexts != 0) code = 6;
    child_exit(code);
  }
  holder.join();
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; done == 0 && waited_ms < 10000; waited_ms += 10) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child hung (killed after 10 s)";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(live_counts().contexts, 1u) << "the parent is unaffected";
  ctx.reset();
  EXPECT_EQ(live_counts().idle_contexts, 1u);
}

TEST_F(Contexts, ADroppedContextWaitsForItsStreamsOnce) {
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  ctx->stream(-1);
  int waits = sim().calls("cuStreamSynchronize");
  ctx.reset();  // not kept (limit 0): waited for once, then destroyed
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 2);
  EXPECT_EQ(sim().live("stream"), 0);

  // Kept, then evicted: the wait when it was kept is the only one.
  ContextRecycler::instance().set_limit(1);
  ctx = GreenContext::create(0, &part, std::nullopt);
  for (int i = 0; i < 3; ++i) ctx->stream(0);
  waits = sim().calls("cuStreamSynchronize");
  ctx.reset();
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 3);
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 3);
  EXPECT_EQ(sim().live("stream"), 0);

  // Taken from the recycler and used again: waited for again when dropped.
  ContextRecycler::instance().set_limit(1);
  ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  ctx.reset();
  ctx = GreenContext::create(0, &part, std::nullopt);
  ContextRecycler::instance().set_limit(0);
  waits = sim().calls("cuStreamSynchronize");
  ctx.reset();
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 1);

  // A wait that failed is made again before the stream is destroyed.
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  waits = sim().calls("cuStreamSynchronize");
  sim().fail_next("cuStreamSynchronize", 999, 0);
  ctx.reset();
  set_warning_handler(previous);
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 2);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(sim().live("stream"), 0);
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
  const int before = sim().live("stream");
  OwnedStream a(make()), b(make());
  const cu::CUstream second = b.get();
  EXPECT_EQ(sim().live("stream"), before + 2);
  int waits = sim().calls("cuStreamSynchronize");
  a = std::move(b);  // a's own stream is waited for and destroyed
  EXPECT_EQ(a.get(), second);
  EXPECT_EQ(b.get(), nullptr);
  EXPECT_EQ(sim().live("stream"), before + 1);
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
  EXPECT_EQ(sim().live("stream"), before);
  const int destroys = sim().calls("cuStreamDestroy");
  c.destroy();  // nothing left to destroy
  EXPECT_EQ(sim().calls("cuStreamDestroy"), destroys);
}

TEST_F(Contexts, AContextInUseIsCountedExactlyAsLongAsItIsOwned) {
  ContextRecycler::instance().set_limit(2);
  ContextRecycler& recycler = ContextRecycler::instance();
  RecycleKey key;  // no real context needed: handles without driver objects
  key.device = 7;
  EXPECT_FALSE(recycler.take(key, ContextKind::kUser)) << "nothing idle for that key";
  // An owner made by adopt counts from the start and uncounts (destroying) when it goes.
  ContextInUse owned = recycler.adopt(key, ContextKind::kInternal, std::make_unique<ContextHandles>());
  EXPECT_TRUE(owned);
  EXPECT_EQ(live_counts().internal_contexts, 1u);
  ContextInUse moved(std::move(owned));
  EXPECT_FALSE(owned);
  EXPECT_EQ(live_counts().internal_contexts, 1u) << "a move counts nothing twice";
  ContextInUse assigned = recycler.adopt(key, ContextKind::kUser, std::make_unique<ContextHandles>());
  EXPECT_EQ(live_counts().contexts, 1u);
  assigned = std::move(moved);  // the user context it held goes
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().internal_contexts, 1u);
  EXPECT_EQ(assigned.key().device, 7);
  assigned.retire(true);  // kept for reuse
  EXPECT_FALSE(assigned);
  EXPECT_EQ(live_counts().internal_contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 1u);
  {
    ContextInUse taken = recycler.take(key, ContextKind::kUser);
    EXPECT_TRUE(taken);
    EXPECT_EQ(live_counts().contexts, 1u);
    EXPECT_EQ(live_counts().idle_contexts, 0u);
  }  // dropped without retire(true): destroyed, not kept
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  ContextInUse empty;
  empty.retire(true);  // holds nothing: nothing happens
  EXPECT_EQ(live_counts().idle_contexts, 0u);
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
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  {
    CurrentContext current(ctx->context());
    sim().fail_next("cuCtxPopCurrent", 999, 0);
  }
  set_warning_handler(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cuCtxPopCurrent"), std::string::npos);
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

TEST_F(Contexts, DroppedContextsAreReusedWithTheirStreams) {
  ContextRecycler::instance().set_limit(2);
  SmPartition part = partition_with_at_least(0, 16);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  cu::CUgreenCtx first = ctx->handle();
  cu::CUstream stream = ctx->stream(0);
  ctx.reset();
  EXPECT_EQ(sim().live("green_ctx"), 1) << "kept, not destroyed";
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().streams, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 1u);
  EXPECT_EQ(live_counts().idle_streams, 1u);

  const int creates = sim().calls("cuGreenCtxCreate");
  auto again = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates) << "reused";
  EXPECT_EQ(again->handle(), first);
  EXPECT_EQ(again->stream(0), stream);
  EXPECT_EQ(again->sm_count(), 16u);
  EXPECT_EQ(live_counts().streams, 1u);
  EXPECT_EQ(live_counts().idle_contexts, 0u);

  // Other SMs or other options never get it.
  SmPartition other = partition_with_at_least(0, 24);
  auto different = GreenContext::create(0, &other, std::nullopt);
  EXPECT_NE(different->handle(), first);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates + 1);

  // The limit holds: the oldest idle context is destroyed first.
  SmPartition third_part = partition_with_at_least(0, 32);
  auto third = GreenContext::create(0, &third_part, std::nullopt);
  again.reset();
  different.reset();
  third.reset();
  EXPECT_EQ(live_counts().idle_contexts, 2u);
  EXPECT_EQ(sim().live("green_ctx"), 2);
  auto reused = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates + 3) << "the 16-SM context was evicted";
  reused.reset();
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(sim().live("green_ctx"), 0);
  EXPECT_EQ(sim().live("stream"), 0);
}

TEST_F(Contexts, AContextWhoseStreamFailedIsNotReused) {
  ContextRecycler::instance().set_limit(4);
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  sim().fail_next("cuStreamSynchronize", 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */, 0);
  ctx.reset();
  set_warning_handler(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cuStreamSynchronize"), std::string::npos);
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  EXPECT_EQ(sim().live("green_ctx"), 0);
}

TEST_F(EmulatedSplit, RepeatedSplitsReuseTheirContexts) {
  ContextRecycler::instance().set_limit(8);
  SmPartition whole = SmPartition::from_device(0);
  int creates_after_first = 0;
  for (int round = 0; round < 20; ++round) {
    SplitResult result = split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated);
    auto contexts = contexts_of(result, {16, 24, 32});
    if (round == 0) creates_after_first = sim().calls("cuGreenCtxCreate");
  }
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates_after_first) << "later rounds made no context";
  EXPECT_EQ(live_counts().internal_contexts, 0u);
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 5u);  // 3 groups and 2 internal contexts
}

TEST_F(EmulatedSplit, AGroupTakingTheRestNeedsNoInternalContext) {
  SmPartition whole = SmPartition::from_device(0);
  const int before = sim().calls("cuGreenCtxCreate");
  SplitResult exact = split(whole, {group(16), group(whole.sm_count() - 16)}, SplitPath::kEmulated);
  SplitResult backfilled = split(whole, {group(16), group(0, 0, true)}, SplitPath::kEmulated);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), before);
  for (const SplitResult* result : {&exact, &backfilled}) {
    ASSERT_EQ(result->groups.size(), 2u);
    EXPECT_EQ(result->groups[0].sm_count(), 16u);
    EXPECT_EQ(result->groups[1].sm_count(), whole.sm_count() - 16);
    EXPECT_FALSE(result->remainder.has_value());
    auto a = GreenContext::create(0, &result->groups[0], std::nullopt);
    auto b = GreenContext::create(0, &result->groups[1], std::nullopt);
    const std::vector<int> a_list = sms_of(*a);
    const std::set<int> a_sms(a_list.begin(), a_list.end());
    for (int sm : sms_of(*b)) EXPECT_FALSE(a_sms.count(sm)) << sm;
  }
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(Contexts, CreateSplitGoesFromRequestsToDisjointContexts) {
  for (SplitPath path : {SplitPath::kAuto, SplitPath::kEmulated}) {
    auto made = GreenContext::create_split(0, {group(16), group(0, 0, true)}, std::nullopt, path);
    ASSERT_EQ(made.size(), 2u);
    EXPECT_EQ(made[0]->sm_count(), 16u);
    EXPECT_EQ(made[1]->sm_count(), 116u);
    std::set<int> seen;
    for (const auto& ctx : made) {
      EXPECT_EQ(ctx->device(), 0);
      for (int sm : sms_of(*ctx)) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
    }
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

TEST_F(EmulatedSplit, CreateAllMakesEveryGroupConcurrently) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(15, group(8)), SplitPath::kEmulated);
  std::vector<const SmPartition*> parts;
  for (const SmPartition& g : result.groups) parts.push_back(&g);
  auto contexts = GreenContext::create_all(0, parts, std::nullopt);
  ASSERT_EQ(contexts.size(), 15u);
  std::set<int> seen;
  for (const auto& ctx : contexts) {
    EXPECT_EQ(ctx->sm_count(), 8u);
    for (int sm : sms_of(*ctx)) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
  }
  EXPECT_EQ(live_counts().contexts, 15u);
  contexts.clear();
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(sim().live("green_ctx"), 0);
  EXPECT_TRUE(GreenContext::create_all(0, {}, std::nullopt).empty());
}

TEST_F(EmulatedSplit, CreateAllKeepsNothingWhenOneCreationFails) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(4, group(8)), SplitPath::kEmulated);
  std::vector<const SmPartition*> parts;
  for (const SmPartition& g : result.groups) parts.push_back(&g);
  sim().fail_next("cuGreenCtxCreate", 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 2);
  try {
    GreenContext::create_all(0, parts, std::nullopt);
    FAIL() << "no error";
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("cuGreenCtxCreate"), std::string::npos) << e.what();
  }
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(sim().live("green_ctx"), 0);
  EXPECT_EQ(sim().misuse(), 0);
}

TEST_F(EmulatedSplit, CreateAllTakesIdleContextsFirstAndStartsThreadsOnlyForCreations) {
  ContextRecycler::instance().set_limit(16);
  SmPartition whole = SmPartition::from_device(0);
  SplitResult eights = split(whole, std::vector<GroupRequest>(6, group(8)));
  SplitResult others = split(whole, {group(16), group(24), group(32)});
  std::vector<const SmPartition*> parts;
  for (const SmPartition& g : eights.groups) parts.push_back(&g);
  auto with = [&](std::vector<const SmPartition*> list, std::size_t extra) {
    for (std::size_t i = 0; i < extra; ++i) list.push_back(&others.groups[i]);
    return list;
  };
  struct Delta {
    int creates, threads;
  };
  auto create_all = [&](const std::vector<const SmPartition*>& list,
                        std::vector<std::shared_ptr<GreenContext>>* out) {
    const int creates = sim().calls("cuGreenCtxCreate"), threads = g_threads_started.load();
    *out = GreenContext::create_all(0, list, std::nullopt);
    EXPECT_EQ(out->size(), list.size());
    for (std::size_t i = 0; i < out->size(); ++i) EXPECT_EQ((*out)[i]->sm_count(), list[i]->sm_count()) << i;
    return Delta{sim().calls("cuGreenCtxCreate") - creates, g_threads_started.load() - threads};
  };
  std::vector<std::shared_ptr<GreenContext>> made;

  // Six creations: this thread and five helpers.
  Delta d = create_all(parts, &made);
  EXPECT_EQ(d.creates, 6);
  EXPECT_EQ(d.threads, 5);
  std::set<cu::CUgreenCtx> first;
  for (const auto& ctx : made) first.insert(ctx->handle());
  made.clear();
  EXPECT_EQ(live_counts().idle_contexts, 6u);

  // All six idle: taken on this thread, no creation, no thread.
  d = create_all(parts, &made);
  EXPECT_EQ(d.creates, 0);
  EXPECT_EQ(d.threads, 0);
  std::set<cu::CUgreenCtx> again;
  for (const auto& ctx : made) again.insert(ctx->handle());
  EXPECT_EQ(again, first);
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  EXPECT_EQ(live_counts().contexts, 6u);
  made.clear();

  // Six idle and one to make: the creation runs on this thread.
  d = create_all(with(parts, 1), &made);
  EXPECT_EQ(d.creates, 1);
  EXPECT_EQ(d.threads, 0);
  made.clear();

  // Seven idle and two to make: one helper.
  d = create_all(with(parts, 3), &made);
  EXPECT_EQ(d.creates, 2);
  EXPECT_EQ(d.threads, 1);
  made.clear();
  EXPECT_EQ(live_counts().idle_contexts, 9u);
  EXPECT_EQ(live_counts().contexts, 0u);
}

TEST_F(EmulatedSplit, CreateAllMakesEveryContextWithFewerThreadsThanItAsksFor) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(6, group(8)));
  std::vector<const SmPartition*> parts;
  for (const SmPartition& g : result.groups) parts.push_back(&g);
  for (int allowed : {0, 2}) {
    const int threads = g_threads_started.load(), creates = sim().calls("cuGreenCtxCreate");
    g_threads_allowed = allowed;  // the rest of the five helpers cannot be started
    std::vector<std::shared_ptr<GreenContext>> made;
    try {
      made = GreenContext::create_all(0, parts, std::nullopt);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    g_threads_allowed = -1;
    EXPECT_EQ(g_threads_started.load() - threads, allowed);
    EXPECT_EQ(sim().calls("cuGreenCtxCreate") - creates, 6);
    ASSERT_EQ(made.size(), 6u);
    std::set<int> seen;
    for (const auto& ctx : made) {
      ASSERT_NE(ctx, nullptr);
      for (int sm : sms_of(*ctx)) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
    }
    EXPECT_EQ(seen.size(), 48u);
  }
}

TEST_F(EmulatedSplit, CreateAllWithIdleContextsStillKeepsNothingOnAFailure) {
  ContextRecycler::instance().set_limit(16);
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(5, group(8)));
  std::vector<const SmPartition*> parts;
  for (const SmPartition& g : result.groups) parts.push_back(&g);
  {
    std::vector<const SmPartition*> first_three(parts.begin(), parts.begin() + 3);
    auto made = GreenContext::create_all(0, first_three, std::nullopt);
  }
  ASSERT_EQ(live_counts().idle_contexts, 3u);
  sim().fail_next("cuGreenCtxCreate", 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 0);
  try {
    GreenContext::create_all(0, parts, std::nullopt);
    FAIL() << "no error";
  } catch (const DriverError& e) {
    EXPECT_EQ(e.call(), "cuGreenCtxCreate");
  }
  // The three taken back and the one made are idle again; nothing is in use.
  LiveCounts live = live_counts();
  EXPECT_EQ(live.contexts, 0u);
  EXPECT_EQ(live.idle_contexts, 4u);
  EXPECT_EQ(sim().live("green_ctx"), 4);
  // A partition of another device fails the call on this thread, before any creation; the
  // idle contexts taken before it go back.
  const int creates = sim().calls("cuGreenCtxCreate"), threads = g_threads_started.load();
  SmPartition elsewhere(1, whole.resource(), SmPartition::Origin::kDevice, 8, nullptr);
  std::vector<const SmPartition*> mixed = parts;
  mixed.insert(mixed.begin() + 4, &elsewhere);  // after partitions whose contexts are idle
  try {
    GreenContext::create_all(0, mixed, std::nullopt);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("device_id=0 disagrees with the sm_partition's device (1)"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates);
  EXPECT_EQ(g_threads_started.load(), threads);
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 4u);
}

TEST_F(EmulatedSplit, InternalContextsLiveAsLongAsTheirPartitions) {
  SmPartition whole = SmPartition::from_device(0);
  auto result = std::make_unique<SplitResult>(split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated));
  EXPECT_EQ(live_counts().internal_contexts, 2u);
  SmPartition keep = result->groups[2];
  result.reset();
  EXPECT_EQ(live_counts().internal_contexts, 2u);  // the last group derives from both
  keep = whole;
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, CountsTheHardwareCannotGiveAreValueErrors) {
  SmPartition whole = SmPartition::from_device(0);
  try {
    split(whole, {group(10)}, SplitPath::kEmulated);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nearest counts it can give: 8, 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(split(whole, {group(11, 2)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {group(8, 4)}, SplitPath::kEmulated), ValueError);
  std::vector<GroupRequest> sixteen(16, group(8));
  try {
    split(whole, sixteen, SplitPath::kEmulated);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("only 15 groups"), std::string::npos) << e.what();
  }
  EXPECT_THROW(split(whole, {group(128), group(8)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {group(0, 0, true), group(8)}, SplitPath::kEmulated), ValueError);
  EXPECT_THROW(split(whole, {}, SplitPath::kEmulated), ValueError);
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, ErrorsSayWhatIsLeftAndWhatTheLayoutCanGive) {
  SmPartition whole = SmPartition::from_device(0);
  auto message = [&](const std::vector<GroupRequest>& requests) {
    try {
      split(whole, requests, SplitPath::kEmulated);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // 128 SMs in 8-SM groups do not fit the GPCs (15 such groups, 120 SMs); the whole device does.
  std::string m = message({group(128)});
  EXPECT_NE(m.find("num_sms=128 cannot be given from the 132 SMs left; nearest counts it can give: 120, 132"),
            std::string::npos) << m;
  // The first group takes every SM (in units of 2): none for the second.
  m = message({group(132, 2), group(0)});
  EXPECT_NE(m.find("no SMs are left for group 1 (132 SMs were split)"), std::string::npos) << m;
  // Discovery leaves room for the groups after it...
  m = message({group(0), group(128)});
  EXPECT_NE(m.find("group 0: discovery (num_sms=0) found no group of at least 8 SMs in the 132 SMs left "
                   "after reserving 128 for the groups after it"),
            std::string::npos) << m;
  {
    SplitResult found = split(whole, {group(0), group(8, 2)}, SplitPath::kEmulated);
    auto contexts = contexts_of(found, {120, 8});
    ASSERT_TRUE(found.remainder.has_value());
    EXPECT_EQ(found.remainder->sm_count(), 4u);
  }
  // It reserves counts, not places: after 112 SMs in 8-SM groups, the 20 left hold no
  // 16-SM group.
  m = message({group(0), group(16)});
  EXPECT_NE(m.find("group 1: num_sms=16 cannot be given from the 20 SMs left; nearest counts it can give: 8, 20"),
            std::string::npos) << m;
  // ...and finds nothing where the SMs left are scattered: after 120 SMs in 8-SM groups, the 12
  // left are 2 in each of six GPCs.
  m = message({group(0), group(0)});
  EXPECT_NE(m.find("group 1: discovery (num_sms=0) found no group of at least 8 SMs in the 12 SMs left"),
            std::string::npos) << m;
  EXPECT_EQ(m.find("reserving"), std::string::npos) << m;
  EXPECT_EQ(live_counts().internal_contexts, 0u);
}

TEST_F(EmulatedSplit, GroupsThatFitAndSplitsShareOneCheckedCall) {
  SmPartition whole = SmPartition::from_device(0);
  // 8-SM groups of the GPCs (18 x 6, 16, 8): 2 x 6 + 2 + 1; 16-SM groups pair them up.
  EXPECT_EQ(groups_that_fit(whole, 8), 15u);
  EXPECT_EQ(groups_that_fit(whole, 16), 7u);
  EXPECT_EQ(groups_that_fit(whole, 200), 0u);
  // A split output, which the driver refuses (CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION):
  // nothing fits, for the count and for the split alike.
  SplitResult first = split(whole, {group(16)}, SplitPath::kEmulated);
  ASSERT_TRUE(first.remainder.has_value());
  EXPECT_EQ(groups_that_fit(*first.remainder, 8), 0u);
  EXPECT_EQ(groups_that_fit(first.groups[0], 8), 0u);
  // Any other refusal is a DriverError naming the call, from either caller.
  for (int caller = 0; caller < 3; ++caller) {
    sim().fail_next("cuDevSmResourceSplitByCount", 999, 0);
    try {
      if (caller == 0) groups_that_fit(whole, 8);
      if (caller == 1) partition_with_at_least(0, 8);
      if (caller == 2) split(whole, {group(16)}, SplitPath::kEmulated);
      ADD_FAILURE() << "caller " << caller << " did not fail";
    } catch (const DriverError& e) {
      EXPECT_EQ(e.call(), "cuDevSmResourceSplitByCount") << caller;
      EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_UNKNOWN"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(groups_that_fit(whole, 8), 15u) << "usable again afterwards";
}

TEST_F(Faults, FailedCreationNamesTheCallAndLeavesNothing) {
  SmPartition part = partition_with_at_least(0, 16);
  for (const char* call : {"cuDevResourceGenerateDesc", "cuGreenCtxCreate", "cuCtxFromGreenCtx",
                           "cuGreenCtxGetDevResource", "cuDeviceGetDevResource"}) {
    sim().fail_next(call, 999, 0);
    try {
      GreenContext::create(0, std::string(call) == "cuDeviceGetDevResource" ? nullptr : &part, std::nullopt);
      ADD_FAILURE() << call << " did not fail";
    } catch (const DriverError& e) {
      EXPECT_EQ(e.call(), call);
      EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_UNKNOWN"), std::string::npos);
    }
    EXPECT_EQ(sim().live("green_ctx"), 0) << call;
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
    sim().fail_next(call, 999, 1);
    try {
      split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated);
      ADD_FAILURE() << call << " did not fail";
    } catch (const DriverError& e) {
      EXPECT_EQ(e.call(), call);
    }
    sim().clear_failures();
    EXPECT_EQ(live_counts().internal_contexts, 0u) << call;
    EXPECT_EQ(sim().live("green_ctx"), 0) << call;
  }
}

TEST_F(Faults, CleanupFailuresWarnAndNeverThrow) {
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  {
    auto ctx = GreenContext::create(0, nullptr, std::nullopt);
    ctx->stream(0);
    sim().fail_next("cuStreamSynchronize", 999, 0);
  }
  set_warning_handler(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cuStreamSynchronize"), std::string::npos);
  EXPECT_EQ(sim().live("stream"), 0) << "the stream is destroyed all the same";
}

TEST_F(Faults, BenchmarkBaselinesDestroyWhatTheyMadeWhenALaterCallFails) {
  bench::Timing ok = bench::raw_create(0, 16);
  EXPECT_GT(ok.create_ns, 0);
  ok = bench::raw_split_create(0, 16, true);
  EXPECT_GE(ok.create_ns, ok.split_ns);
  EXPECT_EQ(sim().live("green_ctx"), 0);
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
    try {
      if (c.split) {
        bench::raw_split_create(0, 16, c.concurrently);
      } else {
        bench::raw_create(0, 16);
      }
      ADD_FAILURE() << "no error";
    } catch (const DriverError& e) {
      EXPECT_EQ(e.call(), c.call);
    }
    sim().clear_failures();
    EXPECT_EQ(sim().live("green_ctx"), 0);
  }
  // The first of two destroys refused: the second context is destroyed all the same.
  sim().fail_next("cuGreenCtxDestroy", 999, 0);
  EXPECT_THROW(bench::raw_split_create(0, 16, false), DriverError);
  EXPECT_EQ(sim().live("green_ctx"), 1) << "only the context whose destroy was refused";
  leaked_by_failed_destroys_.green_ctx += 1;
  EXPECT_EQ(sim().misuse(), 0);
  if (version() >= 12050) {
    auto ctx = GreenContext::create(0, nullptr, std::nullopt);
    const int streams = sim().live("stream");
    bench::raw_stream_create(reinterpret_cast<std::uintptr_t>(ctx->handle()), 0);
    EXPECT_EQ(sim().live("stream"), streams);
  }
}

TEST_F(Faults, ProbeLoadFailureIsReported) {
  // the probe library loads once per process; a failed launch names the call
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream stream = ctx->stream(0);
  std::vector<unsigned> ids(8);
  sim().fail_next("cuLaunchKernel", 2, 0);
  try {
    launch_sm_probe(stream, reinterpret_cast<cu::CUdeviceptr>(ids.data()), 8, 32, 0);
    FAIL();
  } catch (const DriverError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernel");
  }
  cu::CUcontext current = nullptr;
  driver().cuCtxGetCurrent(&current);
  EXPECT_EQ(current, nullptr) << "the probe pops the context it pushed";
}

// What a user does with the core: partitions, a split, contexts made together and alone,
// streams, the probe, push/pop, and dropping everything with recycling on.
void user_scenario() {
  ContextRecycler::instance().set_limit(4);
  {
    SmPartition whole = SmPartition::from_device(0);
    SmPartition part = partition_with_at_least(0, 16);
    SplitResult result = split(whole, {group(16), group(24), group(32)});
    std::vector<const SmPartition*> parts;
    for (const SmPartition& g : result.groups) parts.push_back(&g);
    auto contexts = GreenContext::create_all(0, parts, std::nullopt);
    auto ctx = GreenContext::create(0, &part, std::nullopt);
    cu::CUstream stream = ctx->stream(0);
    ctx->stream(-1);
    ctx->push_current();
    ctx->pop_current();
    if (stream_sm_count(stream, 0) != ctx->sm_count()) throw std::logic_error("green stream's SM count");
    if (stream_sm_count(nullptr, 0) != 132u) throw std::logic_error("default stream's SM count");
    std::vector<unsigned> ids(64);
    launch_sm_probe(stream, reinterpret_cast<cu::CUdeviceptr>(ids.data()), 64, 32, 0);
    split(GreenContext::sm_partition(ctx), {group(8)});
    {  // a switch of layouts: the second pair of streams after the first
      StreamFence first({{contexts[0], contexts[0]->stream(0)}, {contexts[1], contexts[1]->stream(0)}});
      StreamFence second({{ctx, stream}, {contexts[2], contexts[2]->stream(-1)}});
      second.order_after(first);
    }
    contexts.clear();
    ctx.reset();
    auto again = GreenContext::create(0, &part, std::nullopt);
    again->stream(0);
  }
  ContextRecycler::instance().release_all();
}

TEST_F(Faults, EveryDriverCallFailingInTurn) {
  user_scenario();  // loads the probe library once, as a process would
  std::vector<std::string> names;
  for (const EntryPointStatus& entry : entry_point_status())
    if (entry.present) names.push_back(entry.name);
  int failures_seen = 0;
  std::set<std::string> failed_names;
  for (const std::string& name : names) {
    for (int skip = 0; skip < 3; ++skip) {
      SCOPED_TRACE(name + " failing at call " + std::to_string(skip + 1));
      std::vector<std::string> warnings;
      WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
      const int before = sim().calls(name.c_str());
      sim().fail_next(name.c_str(), 999, skip);
      std::string error;
      ContextRecycler::instance().release_all();
      const int green_before = sim().live("green_ctx"), streams_before = sim().live("stream");
      const int events_before = sim().live("event");
      try {
        user_scenario();
      } catch (const DriverError& e) {
        error = e.call();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a DriverError: " << e.what();
      }
      sim().clear_failures();
      set_warning_handler(previous);
      const bool failed = sim().calls(name.c_str()) - before > skip;
      if (failed) {
        ++failures_seen;
        failed_names.insert(name);
        const bool warned = std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) {
          return w.find(name) != std::string::npos;
        });
        const bool only_formats_messages = name == "cuGetErrorName" || name == "cuGetErrorString";
        EXPECT_TRUE(error == name || warned || only_formats_messages)
            << "the failure was neither raised nor warned about (error: '" << error << "')";
      } else {
        EXPECT_EQ(error, "") << "an error although the call did not fail";
      }
      ContextRecycler::instance().release_all();
      ContextRecycler::instance().set_limit(0);
      LiveCounts live = live_counts();
      EXPECT_EQ(live.contexts + live.internal_contexts + live.streams, 0u);
      const int green_leaked = failed && name == "cuGreenCtxDestroy" ? 1 : 0;
      const int streams_leaked = failed && name == "cuStreamDestroy" ? 1 : 0;
      const int events_leaked = failed && name == "cuEventDestroy" ? 1 : 0;
      EXPECT_EQ(sim().live("green_ctx"), green_before + green_leaked);
      EXPECT_EQ(sim().live("stream"), streams_before + streams_leaked);
      EXPECT_EQ(sim().live("event"), events_before + events_leaked);
      EXPECT_EQ(live_fence_events(), 0u);
      leaked_by_failed_destroys_.green_ctx += green_leaked;
      leaked_by_failed_destroys_.streams += streams_leaked;
      leaked_by_failed_destroys_.events += events_leaked;
      EXPECT_EQ(sim().misuse(), 0) << "a handle was used after it was destroyed";
      cu::CUcontext current = nullptr;
      driver().cuCtxGetCurrent(&current);
      // A pop the driver refuses, or cannot check, leaves the context where it is
      // (pop_context can be retried).
      if (!(failed && (name == "cuCtxPopCurrent" || name == "cuCtxGetCurrent"))) {
        EXPECT_EQ(current, nullptr) << "a context was left current";
      }
      while (current != nullptr) {  // tidy up after a failed pop
        cu::CUcontext popped = nullptr;
        driver().cuCtxPopCurrent(&popped);
        driver().cuCtxGetCurrent(&current);
      }
      EXPECT_NO_THROW(user_scenario()) << "the core is usable again afterwards";
    }
  }
  EXPECT_GT(failures_seen, 20);
  for (const char* call : {"cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy"})
    EXPECT_TRUE(failed_names.count(call)) << call << " was never failed";
  std::printf("driver calls failed in turn: %d failures over %zu entry points\n", failures_seen, names.size());
}

using Devices = Sim_;

TEST_F(Devices, ContextsOnEveryDeviceAndClearErrorsAcrossThem) {
  if (device_count() < 2) GTEST_SKIP() << "needs TGC_SIM_DEVICE_COUNT=2";
  ContextRecycler::instance().set_limit(4);
  SmPartition on_zero = partition_with_at_least(0, 16);
  SmPartition on_one = partition_with_at_least(1, 16);
  EXPECT_EQ(on_one.device(), 1);
  auto a = GreenContext::create(0, &on_zero, std::nullopt);
  auto b = GreenContext::create(1, &on_one, std::nullopt);
  EXPECT_EQ(b->device(), 1);
  EXPECT_NE(b->stream(0), a->stream(0));
  try {
    GreenContext::create(1, &on_zero, std::nullopt);
    FAIL() << "a partition of device 0 made a context on device 1";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("device_id=1 disagrees with the sm_partition's device (0); omit "
                                         "device_id or pass device_id=0"),
              std::string::npos) << e.what();
  }
  try {
    GreenContext::create(2, nullptr, std::nullopt);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("valid device_id: 0..1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(check_device(1), 1);
  for (long long bad : {-1LL, 2LL, 1LL << 40}) {
    try {
      check_device(bad);
      FAIL() << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "device_id " + std::to_string(bad) +
                                           " is out of range: this machine has 2 CUDA devices (valid device_id: 0..1)");
    }
  }
  EXPECT_NO_THROW(check_partition_device(on_one, 1));
  EXPECT_THROW(check_partition_device(on_one, 0), ValueError);
  // Idle contexts are only ever reused on their own device.
  a.reset();
  auto again = GreenContext::create(1, &on_one, std::nullopt);
  EXPECT_EQ(again->device(), 1);
  SplitResult split_one = split(SmPartition::from_device(1), {group(8), group(8)});
  std::vector<const SmPartition*> parts{&split_one.groups[0], &split_one.groups[1]};
  auto made = GreenContext::create_all(1, parts, std::nullopt);
  EXPECT_EQ(made[0]->device(), 1);
  EXPECT_THROW(GreenContext::create_all(0, parts, std::nullopt), ValueError);
}

TEST_F(DriverTable, ReportsEntryPointsAndUnknownCodes) {
  EXPECT_EQ(loaded_driver_version(), version());
  EXPECT_EQ(loaded_driver_library(), std::getenv(driver_library_env()));
  int found = 0;
  for (const EntryPointStatus& entry : entry_point_status()) {
    EXPECT_EQ(entry.present, entry.since <= version()) << entry.name;
    found += entry.name == "cuDevSmResourceSplit";
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(driver().error_name(12345), "CUDA_ERROR_UNKNOWN_CODE_12345");
  EXPECT_EQ(driver().error_text(12345), "no description from the driver");
  EXPECT_EQ(driver().error_name(915), "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION");
  EXPECT_NO_THROW(driver().check(cu::CUDA_SUCCESS, "cuInit"));
  EXPECT_THROW(driver().require_version("a future feature", 99000), FeatureUnavailableError);
}

// ---- The SM count behind a stream ---------------------------------------------------------

namespace {
using StreamSmCount = Sim_;

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
  try {
    stream_sm_count(stream, 0);
    FAIL() << "no error";
  } catch (const DriverError& e) {
    EXPECT_EQ(e.call(), "cuGreenCtxGetDevResource");
    EXPECT_EQ(e.name(), "CUDA_ERROR_UNKNOWN");
    EXPECT_EQ(e.code(), 999);
  }
  EXPECT_EQ(driver().cuStreamDestroy(stream), cu::CUDA_SUCCESS);
  EXPECT_EQ(driver().cuGreenCtxDestroy(foreign), cu::CUDA_SUCCESS);
}

// Run alone, with TGC_SIM_FAIL_INIT=100 (ctest's sim_driver_no_device).
TEST(NoDevice, InitFailureIsAClearErrorEveryTime) {
  if (std::getenv("TGC_SIM_FAIL_INIT") == nullptr) GTEST_SKIP() << "needs TGC_SIM_FAIL_INIT";
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      device_count();
      FAIL();
    } catch (const DriverError& e) {
      EXPECT_EQ(e.call(), "cuInit");
      EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
    }
  }
  EXPECT_EQ(installed_driver_version(), version());  // the version needs no cuInit
  EXPECT_FALSE(driver_initialized());
}

// ---- StreamFence: layouts of green-context streams ordered after one another ---------------

namespace {

using Fences = Sim_;

std::vector<void*> sorted(std::vector<void*> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// The contexts of the events alive in the driver, less those in `already` (e.g. events that
// an earlier test's refused cuEventDestroy left behind). Every event was made without timing.
std::vector<void*> live_event_contexts(const std::vector<void*>& already = {}) {
  std::vector<void*> out(256);
  std::vector<unsigned> flags(256);
  out.resize(static_cast<std::size_t>(std::min(sim().live_events(out.data(), flags.data(), 256), 256)));
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(flags[i], cu::CU_EVENT_DISABLE_TIMING) << "event " << i;
  for (void* context : already) {
    auto found = std::find(out.begin(), out.end(), context);
    if (found != out.end()) out.erase(found);
  }
  return sorted(out);
}

// (waiting stream, stream the awaited event was last recorded on), sorted.
using WaitEdge = std::pair<void*, void*>;
std::vector<WaitEdge> wait_edges() {
  std::vector<void*> waiting(64), recorded_on(64);
  const int n = sim().wait_edges(waiting.data(), recorded_on.data(), 64);
  std::vector<WaitEdge> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(std::min(n, 64)); ++i) out.emplace_back(waiting[i], recorded_on[i]);
  std::sort(out.begin(), out.end());
  return out;
}

// Every stream of `waiting` waiting for every stream of `done`, sorted.
std::vector<WaitEdge> all_pairs(const std::vector<cu::CUstream>& waiting, const std::vector<cu::CUstream>& done) {
  std::vector<WaitEdge> out;
  for (cu::CUstream w : waiting)
    for (cu::CUstream d : done) out.emplace_back(w, d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<WaitEdge> sorted_edges(std::vector<WaitEdge> edges) {
  std::sort(edges.begin(), edges.end());
  return edges;
}

}  // namespace

TEST_F(Fences, OneEventPerStreamMadeInTheStreamsContext) {
  SmPartition part = partition_with_at_least(0, 16);
  auto a = GreenContext::create(0, &part, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), a1 = a->stream(-1), b0 = b->stream(0);
  const std::vector<void*> earlier = live_event_contexts();
  const int creates = sim().calls("cuEventCreate"), pushes = sim().calls("cuCtxPushCurrent");
  const int pops = sim().calls("cuCtxPopCurrent");
  {
    StreamFence fence({{a, a0}, {a, a1}, {b, b0}});
    EXPECT_EQ(fence.size(), 3u);
    EXPECT_EQ(fence.device(), 0);
    EXPECT_EQ(sim().calls("cuEventCreate") - creates, 3);
    EXPECT_EQ(sim().calls("cuCtxPushCurrent") - pushes, 3);
    EXPECT_EQ(sim().calls("cuCtxPopCurrent") - pops, 3);
    EXPECT_EQ(live_fence_events(), 3u);
    EXPECT_EQ(sim().live("event"), events_at_start_ + 3);
    EXPECT_EQ(live_event_contexts(earlier), sorted({a->context(), a->context(), b->context()}));
    EXPECT_EQ(current_context(), nullptr) << "a context was left current";
  }
  EXPECT_EQ(live_fence_events(), 0u);
  EXPECT_EQ(sim().live("event"), events_at_start_);
  b->push_current();  // whatever is current stays current
  {
    StreamFence fence({{a, a1}});
    EXPECT_EQ(current_context(), b->context());
    EXPECT_EQ(live_event_contexts(earlier), sorted({a->context()}));
  }
  b->pop_current();
}

TEST_F(Fences, EventsAreDestroyedBeforeTheirContexts) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  auto fence = std::make_unique<StreamFence>(std::vector<StreamFence::Member>{{a, a->stream(0)}, {b, b->stream(0)}});
  std::weak_ptr<GreenContext> weak_a = a, weak_b = b;
  a.reset();
  b.reset();
  EXPECT_FALSE(weak_a.expired() || weak_b.expired()) << "the fence holds its contexts";
  EXPECT_EQ(sim().live("green_ctx"), green_at_start_ + 2);
  fence.reset();
  EXPECT_TRUE(weak_a.expired() && weak_b.expired());
  EXPECT_EQ(sim().live("event"), events_at_start_);
  EXPECT_EQ(sim().live("green_ctx"), green_at_start_);
  EXPECT_EQ(live_fence_events(), 0u);
  // The simulated driver counts an event destroyed after its context as misuse (TearDown).
}

TEST_F(Fences, OrderAfterRecordsOnTheEarlierStreamsAndEveryStreamWaitsForEach) {
  std::vector<std::shared_ptr<GreenContext>> c;
  for (int i = 0; i < 4; ++i) c.push_back(GreenContext::create(0, nullptr, std::nullopt));
  cu::CUstream s0 = c[0]->stream(0), s1 = c[1]->stream(0), s2 = c[2]->stream(0), s2_high = c[2]->stream(-1);
  cu::CUstream s3 = c[3]->stream(0);
  StreamFence old_layout({{c[0], s0}, {c[1], s1}});
  StreamFence new_layout({{c[2], s2}, {c[3], s3}, {c[2], s2_high}});
  sim().clear_wait_edges();
  int records = sim().calls("cuEventRecord"), waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_after(old_layout);
  EXPECT_EQ(sim().calls("cuEventRecord") - records, 2);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent") - waits, 6);
  EXPECT_EQ(wait_edges(), all_pairs({s2, s3, s2_high}, {s0, s1}));
  EXPECT_EQ(current_context(), nullptr);

  // The same layout again: nothing recorded, nothing waited for.
  sim().clear_wait_edges();
  records = sim().calls("cuEventRecord");
  waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_after(new_layout);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent"), waits);
  EXPECT_TRUE(wait_edges().empty());

  // Layouts sharing a stream: it also waits for its own recording, which costs nothing.
  StreamFence overlapping({{c[0], s0}, {c[2], s2}});
  sim().clear_wait_edges();
  overlapping.order_after(new_layout);
  EXPECT_EQ(wait_edges(), all_pairs({s0, s2}, {s2, s3, s2_high}));
  sim().clear_wait_edges();
  old_layout.order_after(overlapping);  // the events are recorded anew each time
  EXPECT_EQ(wait_edges(), all_pairs({s0, s1}, {s0, s2}));
}

TEST_F(Fences, OrderEachAfterPairsTheStreamsByPosition) {
  std::vector<std::shared_ptr<GreenContext>> c;
  for (int i = 0; i < 4; ++i) c.push_back(GreenContext::create(0, nullptr, std::nullopt));
  cu::CUstream old_latency = c[0]->stream(-1), old_batch = c[1]->stream(0);
  cu::CUstream new_latency = c[2]->stream(-1), new_batch = c[3]->stream(0);
  StreamFence old_layout({{c[0], old_latency}, {c[1], old_batch}});
  StreamFence new_layout({{c[2], new_latency}, {c[3], new_batch}});
  sim().clear_wait_edges();
  int records = sim().calls("cuEventRecord"), waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_each_after(old_layout);
  EXPECT_EQ(sim().calls("cuEventRecord") - records, 2);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent") - waits, 2);
  EXPECT_EQ(wait_edges(), sorted_edges({{new_latency, old_latency}, {new_batch, old_batch}}))
      << "each stream waits for its own role's stream alone";
  EXPECT_EQ(current_context(), nullptr);

  // Itself: nothing recorded, nothing waited for.
  records = sim().calls("cuEventRecord");
  new_layout.order_each_after(new_layout);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);

  // Fences of different sizes cannot be paired; nothing is recorded before the check.
  StreamFence single({{c[0], c[0]->stream(0)}});
  records = sim().calls("cuEventRecord");
  try {
    new_layout.order_each_after(single);
    FAIL() << "paired fences of 2 and 1 streams";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("as many streams as each other, not 2 and 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sim().calls("cuEventRecord"), records);

  // One context with two streams (a layout of the whole device) pairs the same way.
  cu::CUstream whole_latency = c[0]->stream(-1), whole_batch = c[0]->stream(0);
  StreamFence whole({{c[0], whole_latency}, {c[0], whole_batch}});
  sim().clear_wait_edges();
  whole.order_each_after(new_layout);
  EXPECT_EQ(wait_edges(), sorted_edges({{whole_latency, new_latency}, {whole_batch, new_batch}}));
  StreamFence moved(std::move(whole));
  EXPECT_THROW(whole.order_each_after(new_layout), ValueError);  // NOLINT(bugprone-use-after-move)
}

TEST_F(Fences, AStreamOfAnotherContextIsRefused) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  const int creates = sim().calls("cuEventCreate");
  for (const auto& [members, index] :
       {std::pair{std::vector<StreamFence::Member>{{a, a->stream(0)}, {a, b->stream(0)}}, 1},
        std::pair{std::vector<StreamFence::Member>{{b, a->stream(-1)}}, 0}}) {
    try {
      StreamFence fence(members);
      ADD_FAILURE() << "a stream taken for another context's";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("stream " + std::to_string(index) +
                                           " of the StreamFence is not a stream of the green context given with it"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "nothing made";
  EXPECT_EQ(live_fence_events(), 0u);
}

TEST_F(Fences, MissingMembersAreValueErrorsAndMovedFromFencesAreEmpty) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream s = a->stream(0);
  const int creates = sim().calls("cuEventCreate");
  try {
    StreamFence fence(std::vector<StreamFence::Member>{});
    FAIL() << "an empty fence";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("at least one stream"), std::string::npos) << e.what();
  }
  EXPECT_THROW(StreamFence(std::vector<StreamFence::Member>{{nullptr, s}}), ValueError);
  EXPECT_THROW(StreamFence(std::vector<StreamFence::Member>{{a, s}, {a, nullptr}}), ValueError);
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "checked before any event was made";

  StreamFence first({{a, s}});
  StreamFence moved(std::move(first));
  EXPECT_EQ(first.size(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_EQ(live_fence_events(), 1u);
  EXPECT_THROW(moved.order_after(first), ValueError);
  EXPECT_THROW(first.order_after(moved), ValueError);
  StreamFence assigned({{a, s}, {a, a->stream(-1)}});
  EXPECT_EQ(live_fence_events(), 3u);
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 1u);
  EXPECT_EQ(moved.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(live_fence_events(), 1u) << "the assigned-to fence's events were destroyed";
  EXPECT_EQ(sim().live("event"), events_at_start_ + 1);
  StreamFence other({{a, a->stream(-1)}});
  sim().clear_wait_edges();
  assigned.order_after(other);
  EXPECT_EQ(wait_edges().size(), 1u);
}

TEST_F(Fences, TheSimulatedDriverKeepsEventsToTheirContexts) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), b0 = b->stream(0);
  const DriverApi& api = driver();
  cu::CUevent none = nullptr;
  EXPECT_EQ(api.cuEventCreate(&none, cu::CU_EVENT_DISABLE_TIMING), 201) << "needs a current context";
  a->push_current();
  cu::CUevent of_a = nullptr;
  ASSERT_EQ(api.cuEventCreate(&of_a, cu::CU_EVENT_DISABLE_TIMING), 0);
  a->pop_current();
  sim().clear_wait_edges();
  EXPECT_EQ(api.cuStreamWaitEvent(b0, of_a, 0), 0) << "a wait takes another context's event";
  EXPECT_EQ(wait_edges(), std::vector<WaitEdge>({{b0, nullptr}})) << "never recorded";
  pid_t child = fork();  // the refusal counts as misuse: let a child see it
  ASSERT_NE(child, -1);
  if (child == 0) {  // raw driver calls only: the core refuses to run in a forked child
    const int misuse = sim().misuse();
    const bool refused = api.cuEventRecord(of_a, b0) == 400 && sim().misuse() == misuse + 1;
    std::_Exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "recorded on another context's stream";
  EXPECT_EQ(api.cuEventRecord(of_a, a0), 0);
  EXPECT_EQ(api.cuEventDestroy(of_a), 0);
}

TEST_F(Devices, AFenceKeepsToOneDevice) {
  if (device_count() < 2) GTEST_SKIP() << "needs TGC_SIM_DEVICE_COUNT=2";
  auto zero = GreenContext::create(0, nullptr, std::nullopt);
  auto one = GreenContext::create(1, nullptr, std::nullopt);
  cu::CUstream zero0 = zero->stream(0), one0 = one->stream(0), one1 = one->stream(-1);
  try {
    StreamFence mixed({{zero, zero0}, {one, one0}});
    FAIL() << "a fence over two devices";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("on one device, not on devices 0 and 1"), std::string::npos) << e.what();
  }
  StreamFence on_one({{one, one0}});
  StreamFence on_zero({{zero, zero0}});
  EXPECT_EQ(on_one.device(), 1);
  const int records = sim().calls("cuEventRecord");
  EXPECT_THROW(on_one.order_after(on_zero), ValueError);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);
  StreamFence also_on_one({{one, one1}});
  sim().clear_wait_edges();
  on_one.order_after(also_on_one);
  EXPECT_EQ(wait_edges(), all_pairs({one0}, {one1}));
}

TEST_F(Faults, FailedFenceCreationNamesTheCallAndLeavesNothing) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  const std::vector<StreamFence::Member> members{{a, a->stream(0)}, {b, b->stream(0)}};
  const std::vector<void*> earlier = live_event_contexts();
  for (const char* call : {"cuCtxPushCurrent", "cuEventCreate", "cuCtxPopCurrent"}) {
    for (int skip = 0; skip < 2; ++skip) {  // failing for the first stream, then the second
      SCOPED_TRACE(std::string(call) + " failing for stream " + std::to_string(skip + 1));
      sim().fail_next(call, 999, skip);
      try {
        StreamFence fence(members);
        ADD_FAILURE() << "no error";
      } catch (const DriverError& e) {
        EXPECT_EQ(e.call(), call);
        EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_UNKNOWN"), std::string::npos) << e.what();
      }
      sim().clear_failures();
      EXPECT_EQ(live_fence_events(), 0u);
      EXPECT_EQ(sim().live("event"), events_at_start_);
      // A pop the driver refuses leaves that context current, as anywhere in the core.
      const GreenContext& failing = *members[static_cast<std::size_t>(skip)].context;
      const bool left_current = std::string(call) == "cuCtxPopCurrent";
      EXPECT_EQ(current_context(), left_current ? failing.context() : nullptr);
      if (left_current) failing.pop_current();
    }
  }
  sim().fail_next("cuStreamGetCtx", 999, 1);  // checking the second stream's context
  const int creates = sim().calls("cuEventCreate");
  try {
    StreamFence fence(members);
    ADD_FAILURE() << "no error";
  } catch (const DriverError& e) {
    EXPECT_EQ(e.call(), "cuStreamGetCtx");
  }
  sim().clear_failures();
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "streams are checked before any event is made";
  StreamFence fence(members);  // works again
  EXPECT_EQ(live_event_contexts(earlier), sorted({a->context(), b->context()}));
}

TEST_F(Faults, FailedOrderingNamesTheCallAndLeavesTheFencesUsable) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), a1 = a->stream(-1), b0 = b->stream(0), b1 = b->stream(-1);
  StreamFence old_layout({{a, a0}, {b, b0}});
  StreamFence new_layout({{a, a1}, {b, b1}});
  for (const char* call : {"cuEventRecord", "cuStreamWaitEvent"}) {
    for (int skip = 0; skip < 2; ++skip) {
      SCOPED_TRACE(std::string(call) + " failing at call " + std::to_string(skip + 1));
      sim().fail_next(call, 999, skip);
      try {
        new_layout.order_after(old_layout);
        ADD_FAILURE() << "no error";
      } catch (const DriverError& e) {
        EXPECT_EQ(e.call(), call);
      }
      sim().clear_failures();
      EXPECT_EQ(live_fence_events(), 4u);
      EXPECT_EQ(current_context(), nullptr);
    }
  }
  sim().clear_wait_edges();
  new_layout.order_after(old_layout);
  EXPECT_EQ(wait_edges(), all_pairs({a1, b1}, {a0, b0}));
}

TEST_F(Faults, FailedEventDestructionWarnsAndNeverThrows) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  {
    StreamFence fence({{a, a->stream(0)}, {a, a->stream(-1)}});
    sim().fail_next("cuEventDestroy", 999, 0);
  }
  set_warning_handler(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cuEventDestroy"), std::string::npos) << warnings[0];
  EXPECT_EQ(live_fence_events(), 0u);
  EXPECT_EQ(sim().live("event"), events_at_start_ + 1) << "the other event is destroyed all the same";
  leaked_by_failed_destroys_.events += 1;  // the driver refused: the event stays
}

// Run alone, with TGC_SIM_HIDE naming entry points (ctest's sim_driver_missing_entry_points).
TEST(MissingEntryPoints, ADriverLackingWhatItsVersionClaimsIsNamedAndWorkedAround) {
  if (std::getenv("TGC_SIM_HIDE") == nullptr) GTEST_SKIP() << "needs TGC_SIM_HIDE";
  ASSERT_GE(version(), 13010);
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(driver().cuDevSmResourceSplit, nullptr);
  EXPECT_EQ(native_split_available_path(), SplitPath::kEmulated) << "auto takes the path that works";
  SmPartition whole = SmPartition::from_device(0);
  try {
    split(whole, {group(16)}, SplitPath::kNative);
    FAIL() << "no error";
  } catch (const FeatureUnavailableError& e) {
    FAIL() << "the version is high enough: " << e.what();
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("SMPartition.split (cuDevSmResourceSplit) needs a driver entry point that"), std::string::npos) << m;
    EXPECT_NE(m.find("does not provide, although it reports version 13.1 or newer"), std::string::npos) << m;
  }
  EXPECT_EQ(split(whole, {group(16)}).groups.at(0).sm_count(), 16u);
  // No cuGreenCtxStreamCreate: streams are made with the context current, as on driver 12.4.
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  const int created = sim().calls("cuStreamCreateWithPriority");
  EXPECT_NE(ctx->stream(0), nullptr);
  EXPECT_EQ(sim().calls("cuStreamCreateWithPriority"), created + 1);
  EXPECT_THROW(bench::raw_stream_create(reinterpret_cast<std::uintptr_t>(ctx->handle()), 0), std::runtime_error);
  // No cuStreamGetGreenCtx: the SM count of a stream cannot be known, and says so.
  try {
    stream_sm_count(ctx->stream(0), 0);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuStreamGetGreenCtx) needs a driver entry point"), std::string::npos)
        << e.what();
  }
  ctx.reset();
  EXPECT_EQ(sim().live("stream"), 0);
  EXPECT_EQ(sim().live("green_ctx"), 0);
}

// Run alone, with TGC_TEST_EXPECTED_IDLE_LIMIT and TORCH_GREEN_CONTEXTS_IDLE_LIMIT set
// (ctest's idle_limit_*).
TEST(IdleLimit, ReadFromTheEnvironmentWhenTheRecyclerIsMade) {
  const char* expected = std::getenv("TGC_TEST_EXPECTED_IDLE_LIMIT");
  if (expected == nullptr) GTEST_SKIP() << "needs TGC_TEST_EXPECTED_IDLE_LIMIT";
  const std::size_t limit = std::strtoul(expected, nullptr, 10);
  EXPECT_EQ(ContextRecycler::instance().limit(), limit);
  // A value that is not a whole number keeps the default and is refused where contexts are made.
  const std::string given = std::getenv(idle_limit_env());
  if (given.find_first_not_of("0123456789") == std::string::npos) {
    EXPECT_NO_THROW(check_idle_limit_env());
  } else {
    try {
      check_idle_limit_env();
      FAIL() << "no error for " << given;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("TORCH_GREEN_CONTEXTS_IDLE_LIMIT='" + given + "'"), std::string::npos)
          << e.what();
    }
  }
  ::setenv(idle_limit_env(), "3", 1);
  EXPECT_EQ(ContextRecycler::instance().limit(), limit) << "read once";
  ContextRecycler::instance().set_limit(limit + 1);
  EXPECT_EQ(ContextRecycler::instance().limit(), limit + 1);
}

// ---- Unions of split pieces ----------------------------------------------------------------

namespace {

using Unions = Sim_;

std::set<int> sm_set(const GreenContext& ctx) {
  const std::vector<int> list = sms_of(ctx);
  return std::set<int>(list.begin(), list.end());
}

std::vector<SplitPath> paths_here() {
  std::vector<SplitPath> paths{SplitPath::kEmulated};
  if (version() >= 13010) paths.push_back(SplitPath::kNative);
  return paths;
}

template <typename Fn>
std::string value_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ValueError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ValueError";
  return "";
}

}  // namespace

TEST_F(Unions, PiecesOfOneSplitMakeOneContextOnExactlyTheirSMs) {
  SmPartition whole = SmPartition::from_device(0);
  for (SplitPath path : paths_here()) {
    // Co-scheduled in pairs, so that the groups and the backfilled rest share one alignment.
    SplitResult r = split(whole, {group(8, 2), group(8, 2), group(8, 2), group(0, 2, true)}, path);
    ASSERT_EQ(r.groups.size(), 4u);
    const SmPartition& shared = r.groups[3];
    SmPartition latency = SmPartition::combine({&r.groups[0], &shared});
    SmPartition batch = SmPartition::combine({&r.groups[1], &r.groups[2], &shared});
    EXPECT_EQ(latency.sm_count(), 8u + shared.sm_count());
    EXPECT_EQ(batch.sm_count(), 16u + shared.sm_count());
    EXPECT_EQ(latency.resources().size(), 2u);
    EXPECT_FALSE(latency.splittable()) << "a union is not split input";
    EXPECT_THROW(split(latency, {group(8)}, path), ValueError);

    auto a = GreenContext::create(0, &r.groups[0], std::nullopt);
    auto s = GreenContext::create(0, &shared, std::nullopt);
    auto both = GreenContext::create(0, &latency, std::nullopt);
    auto other = GreenContext::create(0, &batch, std::nullopt);
    EXPECT_EQ(both->sm_count(), latency.sm_count());
    std::set<int> expected = sm_set(*a);
    const std::set<int> shared_sms = sm_set(*s);
    expected.insert(shared_sms.begin(), shared_sms.end());
    EXPECT_EQ(sm_set(*both), expected);
    std::set<int> common;
    for (int sm : sm_set(*other)) {
      if (sm_set(*both).count(sm)) common.insert(sm);
    }
    EXPECT_EQ(common, shared_sms) << "two unions share exactly their common piece";

    // The union's context is a context like any other: its resource splits again.
    SmPartition of_context = GreenContext::sm_partition(both);
    EXPECT_EQ(of_context.sm_count(), latency.sm_count());
    EXPECT_EQ(SmPartition::combine({&r.groups[1]}).sm_count(), 8u) << "a union of one is that piece";
  }
}

TEST_F(Unions, TheRulesAreValueErrorsThatNameThem) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult r = split(whole, {group(8), group(8)});
  SplitResult again = split(whole, {group(8), group(8)});
  EXPECT_NE(value_error_of([&] { SmPartition::combine({}); }).find("at least one"), std::string::npos);
  EXPECT_NE(value_error_of([&] { SmPartition::combine({&r.groups[0], &r.groups[0]}); }).find("overlap"),
            std::string::npos);
  SmPartition pair = SmPartition::combine({&r.groups[0], &r.groups[1]});
  EXPECT_NE(value_error_of([&] { SmPartition::combine({&pair, &r.groups[1]}); }).find("overlap"),
            std::string::npos)
      << "a union's pieces count";
  EXPECT_NE(value_error_of([&] { SmPartition::combine({&r.groups[0], &again.groups[1]}); })
                .find("different split() calls"),
            std::string::npos);
  EXPECT_NE(value_error_of([&] { SmPartition::combine({&whole, &r.groups[0]}); }).find("whole device"),
            std::string::npos);
  auto ctx = GreenContext::create(0, &r.groups[0], std::nullopt);
  SmPartition of_context = GreenContext::sm_partition(ctx);
  EXPECT_NE(value_error_of([&] { SmPartition::combine({&of_context, &r.groups[1]}); }).find("context"),
            std::string::npos);
  SplitResult three = split(whole, {group(8), group(8), group(8)});
  SmPartition first_two = SmPartition::combine({&three.groups[0], &three.groups[1]});
  EXPECT_EQ(SmPartition::combine({&first_two, &three.groups[2]}).sm_count(), 24u) << "a union joins further pieces";
  // The remainder is co-scheduled in pairs, the groups by the device's alignment: the driver
  // combines only resources of one alignment.
  ASSERT_TRUE(r.remainder.has_value());
  const std::string mixed = value_error_of([&] { SmPartition::combine({&pair, &*r.remainder}); });
  EXPECT_NE(mixed.find("co-scheduling"), std::string::npos) << mixed;
}

TEST_F(Unions, PiecesOfSeveralDriverSplitsAreRefusedByTheDriverAsAValueError) {
  // Below 13.1 groups of different sizes come from separate driver splits, which the driver
  // does not combine; the native split makes them in one call, which it does.
  SmPartition whole = SmPartition::from_device(0);
  SplitResult mixed = split(whole, {group(16, 2), group(8, 2), group(0, 2, true)}, SplitPath::kEmulated);
  const std::string message =
      value_error_of([&] { SmPartition::combine({&mixed.groups[0], &mixed.groups[1]}); });
  EXPECT_NE(message.find("cannot combine"), std::string::npos) << message;
  EXPECT_NE(message.find("groups of one size"), std::string::npos) << message;
  // The pieces of the last driver split (its group and the remainder) do combine.
  EXPECT_EQ(SmPartition::combine({&mixed.groups[1], &mixed.groups[2]}).sm_count(), 8u + mixed.groups[2].sm_count());
  if (version() >= 13010) {
    SplitResult native = split(whole, {group(16), group(8), group(0, 0, true)}, SplitPath::kNative);
    SmPartition both = SmPartition::combine({&native.groups[0], &native.groups[1]});
    auto ctx = GreenContext::create(0, &both, std::nullopt);
    EXPECT_EQ(ctx->sm_count(), 24u);
  }
}

TEST_F(Unions, AnIdleContextIsReusedOnlyForTheSamePieces) {
  ContextRecycler::instance().set_limit(4);
  SmPartition whole = SmPartition::from_device(0);
  SplitResult r = split(whole, {group(8, 2), group(8, 2), group(0, 2, true)});
  SmPartition both = SmPartition::combine({&r.groups[0], &r.groups[2]});
  auto ctx = GreenContext::create(0, &both, std::nullopt);
  cu::CUgreenCtx first = ctx->handle();
  ctx.reset();
  const int creates = sim().calls("cuGreenCtxCreate");
  auto alone = GreenContext::create(0, &r.groups[0], std::nullopt);
  EXPECT_NE(alone->handle(), first) << "one piece is not the union";
  SplitResult same = split(whole, {group(8, 2), group(8, 2), group(0, 2, true)});
  SmPartition same_both = SmPartition::combine({&same.groups[0], &same.groups[2]});
  auto again = GreenContext::create(0, &same_both, std::nullopt);
  EXPECT_EQ(again->handle(), first) << "the same SMs again get the idle context";
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates + 1);
}
