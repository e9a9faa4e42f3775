#include "sim_fixture.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstdlib>

std::atomic<int> g_threads_started{0};
std::atomic<int> g_threads_allowed{-1};

// std::thread's way in: counted, and refused once g_threads_allowed runs out.
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

#ifdef TGC_COVERAGE_BUILD
extern "C" void __gcov_dump(void);
#endif

[[noreturn]] void child_exit(int code) {
#ifdef TGC_COVERAGE_BUILD
  __gcov_dump();
#endif
  std::_Exit(code);
}

namespace {

template <typename Fn>
Fn control(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

const SimControls& sim() {
  static const SimControls controls = [] {
    void* lib = dlopen(std::getenv(driver_library_env()), RTLD_NOW);
    if (lib == nullptr) std::abort();
    SimControls c;
    c.live = control<decltype(c.live)>(lib, "tgc_sim_live");
    c.misuse = control<decltype(c.misuse)>(lib, "tgc_sim_misuse_count");
    c.fail_next = control<decltype(c.fail_next)>(lib, "tgc_sim_fail_next");
    c.clear_failures = control<decltype(c.clear_failures)>(lib, "tgc_sim_clear_failures");
    c.calls = control<decltype(c.calls)>(lib, "tgc_sim_calls");
    c.ctx_sms = control<decltype(c.ctx_sms)>(lib, "tgc_sim_green_ctx_sms");
    c.last_params = control<decltype(c.last_params)>(lib, "tgc_sim_last_split_params");
    c.ctx_workqueue = control<decltype(c.ctx_workqueue)>(lib, "tgc_sim_green_ctx_workqueue");
    c.live_events = control<decltype(c.live_events)>(lib, "tgc_sim_live_events");
    c.wait_edges = control<decltype(c.wait_edges)>(lib, "tgc_sim_wait_edges");
    c.clear_wait_edges = control<decltype(c.clear_wait_edges)>(lib, "tgc_sim_clear_wait_edges");
    c.mapping_at = control<decltype(c.mapping_at)>(lib, "tgc_sim_mapping_at");
    return c;
  }();
  return controls;
}

int version() { return std::atoi(std::getenv("TGC_SIM_DRIVER_VERSION")); }

std::vector<int> sms_of(const GreenContext& ctx) {
  std::vector<int> out(256);
  int n = sim().ctx_sms(ctx.handle(), out.data(), 256);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::set<int> sm_set(const GreenContext& ctx) {
  const std::vector<int> list = sms_of(ctx);
  return std::set<int>(list.begin(), list.end());
}

std::set<int> expect_disjoint(const std::vector<std::shared_ptr<GreenContext>>& contexts) {
  std::set<int> seen;
  for (const auto& ctx : contexts)
    for (int sm : sms_of(*ctx)) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
  return seen;
}

std::vector<std::shared_ptr<GreenContext>> contexts_of(const SplitResult& result, const std::vector<unsigned>& sizes) {
  std::vector<std::shared_ptr<GreenContext>> contexts;
  EXPECT_EQ(result.groups.size(), sizes.size());
  for (std::size_t i = 0; i < result.groups.size(); ++i) {
    EXPECT_EQ(result.groups[i].sm_count(), sizes[i]) << "group " << i;
    contexts.push_back(GreenContext::create(0, &result.groups[i], std::nullopt));
    EXPECT_EQ(contexts.back()->sm_count(), sizes[i]);
  }
  expect_disjoint(contexts);
  return contexts;
}

std::vector<const SmPartition*> pointers_to(const std::vector<SmPartition>& partitions) {
  std::vector<const SmPartition*> out;
  for (const SmPartition& p : partitions) out.push_back(&p);
  return out;
}

std::vector<SplitPath> paths_here() {
  std::vector<SplitPath> paths{SplitPath::kEmulated};
  if (version() >= 13010) paths.push_back(SplitPath::kNative);
  return paths;
}

CapturedWarnings::CapturedWarnings()
    : previous_(set_warning_handler([this](const std::string& m) { messages.push_back(m); })) {}

CapturedWarnings::~CapturedWarnings() { stop(); }

void CapturedWarnings::stop() {
  if (stopped_) return;
  stopped_ = true;
  set_warning_handler(previous_);
}

void SimTest::SetUp() {
  sim().clear_failures();
  ContextRecycler::instance().set_limit(0);
  green_at_start_ = sim().live("green_ctx");
  streams_at_start_ = sim().live("stream");
  events_at_start_ = sim().live("event");
  memories_at_start_ = sim().live("memory");
  reservations_at_start_ = sim().live("reservation");
  retains_at_start_ = sim().live("primary_retain");
}

void SimTest::TearDown() {
  sim().clear_failures();
  ContextRecycler::instance().release_all();
  ContextRecycler::instance().set_limit(0);
  LiveCounts live = live_counts();
  EXPECT_EQ(live.idle_contexts, 0u);
  EXPECT_EQ(live.idle_streams, 0u);
  EXPECT_EQ(live.contexts, 0u);
  EXPECT_EQ(live.internal_contexts, 0u);
  EXPECT_EQ(live.streams, 0u);
  EXPECT_EQ(green_ctxs_alive(), leaked_by_failed_destroys_.green_ctx) << "a green context leaked";
  EXPECT_EQ(streams_alive(), leaked_by_failed_destroys_.streams) << "a stream leaked";
  EXPECT_EQ(live_fence_events(), 0u);
  EXPECT_EQ(events_alive(), leaked_by_failed_destroys_.events) << "an event leaked";
  EXPECT_EQ(memories_alive(), leaked_by_failed_destroys_.memories) << "device memory leaked";
  EXPECT_EQ(reservations_alive(), leaked_by_failed_destroys_.reservations) << "an address range leaked";
  EXPECT_EQ(primary_retains_alive(), leaked_by_failed_destroys_.primary_retains) << "a primary context retain leaked";
  EXPECT_EQ(sim().misuse(), 0) << "a handle was used after it was destroyed";
  EXPECT_EQ(remembered_green_contexts(), 0u) << "a destroyed context's SM count is still remembered";
}

int SimTest::green_ctxs_alive() const { return sim().live("green_ctx") - green_at_start_; }
int SimTest::streams_alive() const { return sim().live("stream") - streams_at_start_; }
int SimTest::events_alive() const { return sim().live("event") - events_at_start_; }
int SimTest::memories_alive() const { return sim().live("memory") - memories_at_start_; }
int SimTest::reservations_alive() const { return sim().live("reservation") - reservations_at_start_; }
int SimTest::primary_retains_alive() const { return sim().live("primary_retain") - retains_at_start_; }

::testing::AssertionResult message_contains(const char* message_expr, const char* text_expr,
                                            const std::string& message, const std::string& text) {
  if (message.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << message_expr << " does not contain " << text_expr << "\n  message: "
                                       << message << "\n  text: " << text;
}
