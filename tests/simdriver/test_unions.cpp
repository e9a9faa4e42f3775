// Unions of split pieces (SmPartition::combine): one context on exactly their SMs, the rules
// as ValueErrors, and idle contexts reused only for the same pieces.
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "sim_fixture.h"

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
  EXPECT_THROWS_WITH(SmPartition::combine({}), ValueError, "at least one");
  EXPECT_THROWS_WITH(SmPartition::combine({&r.groups[0], &r.groups[0]}), ValueError, "overlap");
  SmPartition pair = SmPartition::combine({&r.groups[0], &r.groups[1]});
  EXPECT_THROWS_WITH(SmPartition::combine({&pair, &r.groups[1]}), ValueError, "overlap");  // a union's pieces count
  EXPECT_THROWS_WITH(SmPartition::combine({&r.groups[0], &again.groups[1]}), ValueError, "different split() calls");
  EXPECT_THROWS_WITH(SmPartition::combine({&whole, &r.groups[0]}), ValueError, "whole device");
  auto ctx = GreenContext::create(0, &r.groups[0], std::nullopt);
  SmPartition of_context = GreenContext::sm_partition(ctx);
  EXPECT_THROWS_WITH(SmPartition::combine({&of_context, &r.groups[1]}), ValueError, "context");
  SplitResult three = split(whole, {group(8), group(8), group(8)});
  SmPartition first_two = SmPartition::combine({&three.groups[0], &three.groups[1]});
  EXPECT_EQ(SmPartition::combine({&first_two, &three.groups[2]}).sm_count(), 24u) << "a union joins further pieces";
  // The remainder is co-scheduled in pairs, the groups by the device's alignment: the driver
  // combines only resources of one alignment.
  ASSERT_TRUE(r.remainder.has_value());
  EXPECT_THROWS_WITH(SmPartition::combine({&pair, &*r.remainder}), ValueError, "co-scheduling");
}

TEST_F(Unions, PiecesOfSeveralDriverSplitsAreRefusedByTheDriverAsAValueError) {
  // Below 13.1 groups of different sizes come from separate driver splits, which the driver
  // does not combine; the native split makes them in one call, which it does.
  SmPartition whole = SmPartition::from_device(0);
  SplitResult mixed = split(whole, {group(16, 2), group(8, 2), group(0, 2, true)}, SplitPath::kEmulated);
  EXPECT_THROWS_THAT(SmPartition::combine({&mixed.groups[0], &mixed.groups[1]}), ValueError, [](const ValueError& e) {
    EXPECT_CONTAINS(e.what(), "cannot combine");
    EXPECT_CONTAINS(e.what(), "groups of one size");
  });
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

TEST_F(Unions, AUnionKeepsEveryPiecesContextsAlive) {
  for (SplitPath path : paths_here()) {
    auto parent = GreenContext::create(0, nullptr, std::nullopt);
    SmPartition of_parent = GreenContext::sm_partition(parent);
    EXPECT_EQ(of_parent.keep_alive().size(), 1u) << "a context's partition keeps that context";
    SplitResult r = split(of_parent, {group(16), group(16), group(0, 0, true)}, path);
    ASSERT_EQ(r.groups.size(), 3u);
    const std::size_t first = r.groups[0].keep_alive().size();
    const std::size_t second = r.groups[1].keep_alive().size();
    EXPECT_GE(first, 1u);
    std::optional<SmPartition> both(SmPartition::combine({&r.groups[0], &r.groups[1]}));
    EXPECT_EQ(both->keep_alive().size(), first + second) << "every piece's keep-alive";
    std::weak_ptr<GreenContext> watched = parent;
    parent.reset();
    of_parent = SmPartition::from_device(0);
    r = SplitResult();
    EXPECT_FALSE(watched.expired()) << "the union alone keeps the parent context";
    both.reset();
    EXPECT_TRUE(watched.expired());
  }
}
