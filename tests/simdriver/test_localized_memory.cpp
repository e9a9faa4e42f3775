// Memory per locality domain (13.4): one address range over one part per domain, the rounding
// of a part to the granularity, the wait before it is freed (kept while a capture forbids it),
// and nothing left behind when a call fails.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "core/localized_memory.h"
#include "sim_fixture.h"

namespace {

constexpr std::size_t kGranule = std::size_t{2} << 20;  // the simulated driver's granularity

struct Placement {
  int domain = -2;
  int accessible = 0;
};

Placement placement_at(cu::CUdeviceptr address) {
  Placement p;
  if (sim().mapping_at(address, &p.domain, &p.accessible) != 0) p.domain = -2;  // nothing mapped
  return p;
}

}  // namespace

TEST_F(Localized, OnePartPerDomainInDomainOrder) {
  if (version() < 13040) {
    const int reserved = sim().calls("cuMemAddressReserve");
    EXPECT_THROWS_THAT(LocalizedMemory::allocate(0, 4096), FeatureUnavailableError,
                       [](const FeatureUnavailableError& e) {
                         EXPECT_EQ(e.feature(), "locality domains");
                         EXPECT_EQ(e.needed_version(), 13040);
                         EXPECT_EQ(e.found_version(), version());
                       });
    EXPECT_EQ(sim().calls("cuMemAddressReserve"), reserved);
    return;
  }
  const int synchronized = sim().calls("cuCtxSynchronize");
  auto memory = LocalizedMemory::allocate(0, 1000);
  EXPECT_EQ(memory->device(), 0);
  EXPECT_EQ(memory->domains(), 2);
  EXPECT_EQ(memory->stride(), kGranule);
  EXPECT_EQ(memories_alive(), 2);
  EXPECT_EQ(reservations_alive(), 1);
  EXPECT_EQ(primary_retains_alive(), 1) << "the primary context is held while the memory lives";
  for (int domain = 0; domain < 2; ++domain) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{999}, kGranule - 1}) {
      const Placement p = placement_at(memory->address() + domain * memory->stride() + offset);
      EXPECT_EQ(p.domain, domain) << "offset " << offset;
      EXPECT_EQ(p.accessible, 1);
    }
  }
  EXPECT_EQ(placement_at(memory->address() + 2 * memory->stride()).domain, -2) << "nothing past the parts";
  // The simulated device's memory is host memory: the parts are usable from end to end.
  std::memset(reinterpret_cast<void*>(memory->address()), 7, 2 * memory->stride());
  cu::CUcontext current = nullptr;
  driver().cuCtxGetCurrent(&current);
  EXPECT_EQ(current, nullptr) << "no context is left current";
  EXPECT_EQ(sim().calls("cuCtxSynchronize"), synchronized);
  memory.reset();
  EXPECT_EQ(sim().calls("cuCtxSynchronize"), synchronized + 1) << "the device's work is waited for first";
  EXPECT_EQ(memories_alive(), 0);
  EXPECT_EQ(reservations_alive(), 0);
  EXPECT_EQ(primary_retains_alive(), 0);
}

TEST_F(Localized, PartsAreRoundedUpToTheGranularity) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  for (auto [bytes, stride] : {std::pair{std::size_t{0}, kGranule}, std::pair{std::size_t{1}, kGranule},
                              std::pair{kGranule, kGranule}, std::pair{kGranule + 1, 2 * kGranule},
                              std::pair{5 * kGranule - 3, 5 * kGranule}}) {
    auto memory = LocalizedMemory::allocate(0, bytes);
    EXPECT_EQ(memory->stride(), stride) << bytes << " bytes";
    EXPECT_EQ(placement_at(memory->address() + memory->stride()).domain, 1);
  }
  EXPECT_EQ(memories_alive(), 0);
}

TEST_F(Localized, ARangeLargerThanAnAddressIsAValueError) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  constexpr std::size_t kMost = std::numeric_limits<std::size_t>::max();
  for (std::size_t bytes : {kMost, kMost - 5, kMost / 2, kMost / 2 - kGranule + 2}) {
    EXPECT_THROWS_WITH(LocalizedMemory::allocate(0, bytes), ValueError,
                       std::to_string(bytes) + " bytes in each of 2 locality domains do not fit in one address range");
  }
  EXPECT_THROWS_WITH(LocalizedMemory::allocate(3, 16), RangeError, "device_id 3 is out of range");
  EXPECT_EQ(reservations_alive(), 0);
  EXPECT_EQ(primary_retains_alive(), 0);
}

TEST_F(Localized, AFailedCallLeavesNothingAllocated) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  for (const char* call : {"cuDevicePrimaryCtxRetain", "cuCtxPushCurrent", "cuMemGetAllocationGranularity",
                           "cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    for (int skip : {0, 1}) {
      SCOPED_TRACE(std::string(call) + " failing at call " + std::to_string(skip + 1));
      const int before = sim().calls(call);
      sim().fail_next(call, 2, skip);  // CUDA_ERROR_OUT_OF_MEMORY
      std::string failed_call, failure;
      std::unique_ptr<LocalizedMemory> memory;
      try {
        memory = LocalizedMemory::allocate(0, 4096);
      } catch (const DriverError& e) {
        failed_call = e.call();
        failure = e.name();
      }
      const bool failed = sim().calls(call) - before > skip;
      sim().clear_failures();
      // Every call is made once; cuMemCreate and cuMemMap once per domain.
      const bool per_domain = std::string(call) == "cuMemCreate" || std::string(call) == "cuMemMap";
      EXPECT_EQ(failed, skip == 0 || per_domain);
      EXPECT_EQ(failed_call, failed ? call : "");
      EXPECT_EQ(failure, failed ? "CUDA_ERROR_OUT_OF_MEMORY" : "");
      EXPECT_EQ(memory == nullptr, failed);
      memory.reset();
      EXPECT_EQ(memories_alive(), 0);
      EXPECT_EQ(reservations_alive(), 0);
      EXPECT_EQ(primary_retains_alive(), 0);
      cu::CUcontext current = nullptr;
      driver().cuCtxGetCurrent(&current);
      EXPECT_EQ(current, nullptr);
    }
  }
}

TEST_F(Localized, AReleaseACaptureForbidsWaitsForTheNextThatCan) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  auto first = LocalizedMemory::allocate(0, 4096);
  auto second = LocalizedMemory::allocate(0, 4096);
  sim().fail_next("cuCtxSynchronize", cu::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 0);
  {
    CapturedWarnings warnings;
    first.reset();
    EXPECT_TRUE(warnings.messages.empty()) << warnings.messages.front();
  }
  EXPECT_EQ(deferred_localized_releases(), 1u);
  EXPECT_EQ(memories_alive(), 4) << "kept while the capture runs";
  // The next release that can wait frees it too.
  second.reset();
  EXPECT_EQ(deferred_localized_releases(), 0u);
  EXPECT_EQ(memories_alive(), 0);
  EXPECT_EQ(reservations_alive(), 0);

  // So does the next allocation; one the capture still forbids stays kept.
  auto third = LocalizedMemory::allocate(0, 4096);
  sim().fail_next("cuCtxSynchronize", cu::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 0);
  third.reset();
  sim().fail_next("cuCtxSynchronize", cu::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 0);
  auto fourth = LocalizedMemory::allocate(0, 4096);
  EXPECT_EQ(deferred_localized_releases(), 1u) << "still capturing at the allocation";
  EXPECT_EQ(memories_alive(), 4);
  fourth = LocalizedMemory::allocate(0, 4096);  // the third's and the old fourth's go
  EXPECT_EQ(deferred_localized_releases(), 0u);
  EXPECT_EQ(memories_alive(), 2);
  fourth.reset();
  EXPECT_EQ(memories_alive(), 0);
  EXPECT_EQ(primary_retains_alive(), 0);
}

TEST_F(Localized, AFailedWaitIsWarnedOfAndTheMemoryFreed) {
  if (version() < 13040) GTEST_SKIP() << "locality domains need 13.4";
  auto memory = LocalizedMemory::allocate(0, 4096);
  sim().fail_next("cuCtxSynchronize", 999, 0);
  CapturedWarnings warnings;
  memory.reset();
  warnings.stop();
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_CONTAINS(warnings.messages[0], "cuCtxSynchronize failed during cleanup: CUDA_ERROR_UNKNOWN (999)");
  EXPECT_EQ(memories_alive(), 0);
  EXPECT_EQ(deferred_localized_releases(), 0u);
}
