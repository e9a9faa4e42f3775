// What the tests of the core against the simulated driver share: the driver's test controls,
// the fixture that checks nothing leaks, and helpers for contexts, warnings and exceptions.
// ctest runs the test binary once per driver version (TGC_SIM_DRIVER_VERSION set to each of
// 12040, 12050, 13000, 13010, 13040) and with the environments in tests/cpp/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/context_recycler.h"
#include "core/current_context.h"
#include "core/device.h"
#include "core/driver_api.h"
#include "core/errors.h"
#include "core/green_context.h"
#include "core/sm_partition.h"
#include "core/split.h"
#include "core/stream_fence.h"
#include "core/stream_sm_count.h"
#include "core/warnings.h"
#include "group_request.h"

using namespace tgc;
using tgc::testing::group;
namespace cu = tgc::abi;

// The simulated driver's tgc_sim_* controls (tests/simdriver/sim_driver.h), found in the
// library the core loaded.
struct SimControls {
  int (*live)(const char* kind);
  int (*misuse)();
  void (*fail_next)(const char* call, int code, int skip);
  void (*clear_failures)();
  int (*calls)(const char* call);
  int (*ctx_sms)(void* green_ctx, int* out, int capacity);
  int (*last_params)(unsigned* out, int max_groups);
  int (*ctx_workqueue)(void* green_ctx, int* scope, int* limit);
  int (*live_events)(void** contexts, unsigned* flags, int capacity);
  int (*wait_edges)(void** waiting, void** recorded_on, int capacity);
  void (*clear_wait_edges)();
  int (*mapping_at)(unsigned long long address, int* domain, int* accessible);
};
const SimControls& sim();

// TGC_SIM_DRIVER_VERSION.
int version();

// Threads started in this process (every std::thread), and, when not negative, how many more
// may start before pthread_create fails with EAGAIN.
extern std::atomic<int> g_threads_started;
extern std::atomic<int> g_threads_allowed;

// Ends a forked child without exit handlers, writing its line counts first in a coverage build.
[[noreturn]] void child_exit(int code);

// The SM ids the driver gave a context, as a list and as a set.
std::vector<int> sms_of(const GreenContext& ctx);
std::set<int> sm_set(const GreenContext& ctx);

// Expects no SM in two of `contexts`; returns the SMs of all of them.
std::set<int> expect_disjoint(const std::vector<std::shared_ptr<GreenContext>>& contexts);

// Makes a context of every group and checks their sizes and that no SM is in two of them.
std::vector<std::shared_ptr<GreenContext>> contexts_of(const SplitResult& result, const std::vector<unsigned>& sizes);

// The addresses of `partitions`, as GreenContext::create_all takes them.
std::vector<const SmPartition*> pointers_to(const std::vector<SmPartition>& partitions);

// The split paths this driver version has: emulated, and native from 13.1.
std::vector<SplitPath> paths_here();

// Collects the core's warnings from construction until stop() (or destruction).
class CapturedWarnings {
 public:
  CapturedWarnings();
  ~CapturedWarnings();
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;
  void stop();
  std::vector<std::string> messages;

 private:
  WarningHandler previous_;
  bool stopped_ = false;
};

// The fixture of most tests: contexts are destroyed when dropped unless a test turns recycling
// on, and at the end nothing the test made is left in the core or the driver.
class SimTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Handles alive in the driver beyond those alive when the test began (which an earlier test's
  // refused destroy may have left).
  int green_ctxs_alive() const;
  int streams_alive() const;
  int events_alive() const;
  // Device memory (cuMemCreate's), address reservations and retains of the primary context.
  int memories_alive() const;
  int reservations_alive() const;
  int primary_retains_alive() const;
  int green_at_start_ = 0, streams_at_start_ = 0, events_at_start_ = 0;
  int memories_at_start_ = 0, reservations_at_start_ = 0, retains_at_start_ = 0;
  // A destroy the driver refuses cannot be retried: its handle stays alive in the simulation.
  struct {
    int green_ctx = 0;
    int streams = 0;
    int events = 0;
    int memories = 0;
    int reservations = 0;
    int primary_retains = 0;
  } leaked_by_failed_destroys_;
};

using DriverTable = SimTest;
using Gates = SimTest;
using Contexts = SimTest;
using NativeSplit = SimTest;
using EmulatedSplit = SimTest;
using SplitPaths = SimTest;
using Unions = SimTest;
using StreamSmCount = SimTest;
using Fences = SimTest;
using Devices = SimTest;
using Faults = SimTest;
using Localized = SimTest;

// EXPECT_CONTAINS(message, text): `message` (a std::string or C string) contains `text`.
::testing::AssertionResult message_contains(const char* message_expr, const char* text_expr,
                                            const std::string& message, const std::string& text);
#define EXPECT_CONTAINS(message, text) EXPECT_PRED_FORMAT2(message_contains, message, text)

template <typename Error, typename Statement, typename Check>
void expect_throws(const char* file, int line, const char* expected, Statement&& statement, Check&& check) {
  try {
    statement();
  } catch (const Error& error) {
    check(error);
    return;
  }
  ADD_FAILURE_AT(file, line) << "expected " << expected << ", but nothing was thrown";
}

// EXPECT_THROWS_THAT(statement, Type, check): `statement` throws a Type (or a subclass of it),
// and check(const Type&) holds for it. An exception of any other type propagates, failing
// the test.
#define EXPECT_THROWS_THAT(statement, Type, check) \
  expect_throws<Type>(__FILE__, __LINE__, #statement " to throw " #Type, [&] { statement; }, check)

// EXPECT_THROWS_WITH(statement, Type, text): `statement` throws a Type (or a subclass of it)
// whose message contains `text`.
#define EXPECT_THROWS_WITH(statement, Type, text) \
  EXPECT_THROWS_THAT(statement, Type, [&](const Type& thrown) { EXPECT_CONTAINS(thrown.what(), text); })

// EXPECT_DRIVER_ERROR(statement, call): `statement` throws a DriverError naming `call`.
#define EXPECT_DRIVER_ERROR(statement, expected_call) \
  EXPECT_THROWS_THAT(statement, DriverError,          \
                     [&](const DriverError& thrown) { EXPECT_EQ(thrown.call(), expected_call); })
