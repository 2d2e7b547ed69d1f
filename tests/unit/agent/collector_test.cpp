// The pool's collector (agent/collector.h) on fake owners: slots offered, updated only by their
// owner, withdrawn with it; claimed and cooling slots not offered; an untrusted owner's slots
// offered to nobody and the owner named once.
#include "agent/collector.h"

#include <gtest/gtest.h>

#include "classad/io.h"

namespace kite::agent {
namespace {

struct FakeStartd {
  std::string name;
  bool trusted = true;
};

classad::ClassAd Ad(const std::string& name, int cpus = 1) {
  auto ad = classad::ParseNewAd("[Name = \"" + name + "\"; Cpus = " + std::to_string(cpus) + "]");
  EXPECT_TRUE(ad);
  return std::move(*ad);
}

std::vector<std::string> Names(const std::vector<SlotOffer>& offers) {
  std::vector<std::string> out;
  for (const auto& o : offers) out.push_back(o.name);
  return out;
}

struct CollectorTest : ::testing::Test {
  double now = 100;
  int asked = 0;
  Collector<FakeStartd> c{[this] { return now; },
                          [this](const FakeStartd& s) {
                            ++asked;
                            return s.trusted;
                          }};
  std::shared_ptr<FakeStartd> a = std::make_shared<FakeStartd>(FakeStartd{"a"});
  std::shared_ptr<FakeStartd> b = std::make_shared<FakeStartd>(FakeStartd{"b"});
  void OfferBoth() {
    c.Offer(a, {{"slot1@a", Ad("slot1@a")}, {"slot2@a", Ad("slot2@a")}}, false);
    c.Offer(b, {{"slot1@b", Ad("slot1@b")}}, true);
  }
};

TEST_F(CollectorTest, OffersEveryFreeSlotOfItsOwnersInNameOrder) {
  uint64_t g = c.generation();
  OfferBoth();
  EXPECT_NE(c.generation(), g);
  auto free = c.FreeSlots();
  EXPECT_EQ(Names(free), (std::vector<std::string>{"slot1@a", "slot1@b", "slot2@a"}));
  EXPECT_FALSE(free[0].site);
  EXPECT_TRUE(free[1].site);
  EXPECT_EQ(c.AllAds().size(), 3u);
  EXPECT_EQ(asked, 2);  // each owner once per pass
}

TEST_F(CollectorTest, OnlyTheOwnerUpdatesItsSlot) {
  OfferBoth();
  uint64_t g = c.generation();
  EXPECT_FALSE(c.Update(*b, "slot1@a", Ad("slot1@a", 64)));
  EXPECT_EQ(c.generation(), g);
  EXPECT_EQ(c.Find("slot1@a")->ad.EvaluateInt("Cpus").value_or(0), 1);
  EXPECT_FALSE(c.Update(*a, "slot9@a", Ad("slot9@a")));  // never offered
  EXPECT_TRUE(c.Update(*a, "slot1@a", Ad("slot1@a", 8)));
  EXPECT_NE(c.generation(), g);
  EXPECT_EQ(c.Find("slot1@a")->ad.EvaluateInt("Cpus").value_or(0), 8);
}

TEST_F(CollectorTest, AClaimedSlotIsNotOfferedUntilItsRunIsReleased) {
  OfferBoth();
  c.Claim("slot1@a", "run-1");
  EXPECT_EQ(Names(c.FreeSlots()), (std::vector<std::string>{"slot1@b", "slot2@a"}));
  c.Release("slot1@a", "run-other");  // another run's end frees nothing
  EXPECT_EQ(c.Find("slot1@a")->run, "run-1");
  c.Release("slot1@a", "run-1");
  EXPECT_EQ(c.FreeSlots().size(), 3u);
}

TEST_F(CollectorTest, ASlotThatRefusedRestsForItsCoolOff) {
  OfferBoth();
  c.CoolOff("slot1@b", 5);
  EXPECT_EQ(Names(c.FreeSlots()), (std::vector<std::string>{"slot1@a", "slot2@a"}));
  now += 5.5;
  EXPECT_EQ(c.FreeSlots().size(), 3u);
}

TEST_F(CollectorTest, AnOwnersSlotsGoWithItAndWithItsEnd) {
  OfferBoth();
  uint64_t g = c.generation();
  c.Withdraw(*a);
  EXPECT_NE(c.generation(), g);
  EXPECT_EQ(Names(c.FreeSlots()), (std::vector<std::string>{"slot1@b"}));
  b.reset();  // gone without a word: offered to nobody, and gone at the next withdrawal
  EXPECT_TRUE(c.FreeSlots().empty());
  EXPECT_EQ(c.slots().size(), 1u);
  FakeStartd other{"x"};
  c.Withdraw(other);
  EXPECT_TRUE(c.slots().empty());
}

TEST_F(CollectorTest, AnUntrustedOwnersSlotsAreOfferedToNobodyAndItIsNamedOnce) {
  OfferBoth();
  a->trusted = false;
  EXPECT_EQ(Names(c.FreeSlots()), (std::vector<std::string>{"slot1@b"}));
  auto distrusted = c.TakeDistrusted();
  ASSERT_EQ(distrusted.size(), 1u);
  EXPECT_EQ(distrusted[0], a);
  EXPECT_TRUE(c.TakeDistrusted().empty());
}

TEST_F(CollectorTest, AReconnectingOwnerTakesItsSlotNamesBack) {
  OfferBoth();
  c.Claim("slot1@b", "run-7");
  auto again = std::make_shared<FakeStartd>(FakeStartd{"b"});
  c.Withdraw(*b);
  c.Offer(again, {{"slot1@b", Ad("slot1@b", 2)}}, true);
  c.Claim("slot1@b", "run-7");  // the run its hello named
  EXPECT_TRUE(c.Update(*again, "slot1@b", Ad("slot1@b", 4)));
  EXPECT_FALSE(c.Update(*b, "slot1@b", Ad("slot1@b", 4)));
  EXPECT_EQ(Names(c.FreeSlots()), (std::vector<std::string>{"slot1@a", "slot2@a"}));
}

}  // namespace
}  // namespace kite::agent
