// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// inbox_test.cc: tests of the hand-off's Inbox (lib/handoff/inbox.h), with
// no engine: Take hands over every submission of every ring, a ring's in the
// order pushed, across its chunks and again with the chunks recycled; Retract
// takes back only the latest push of the caller's own ring, if it is an arm
// of that node and arm and the owner has not marked it, so that the owner
// never sees it, also as the first slot of a fresh chunk, and never the push
// below a rewound one; a thread that exits leaves its ring to the next holder
// of its number, and pushes after it gave the number back (and threads beyond
// the numbers) go to the shared ring under its lock; threads alive at once
// get lanes (homes) of their own; the owner's sleep is ended by an urgent
// push due before the tick it published, by a ring reaching kWakeAt, by Wake
// and by Close, and not by a push it will take in time anyway; an urgent
// push not taken keeps it awake, a far one does not; Close refuses later
// pushes and hands back what the rings held, every chunk in order. Under
// threads: pushers on many threads against an owner that takes and sleeps as
// the advancer does lose no submission and no wake-up (every wait is bounded,
// so a lost wake-up fails instead of hanging); retracts racing an owner that
// marks and takes lose nothing and take nothing twice.
//
// Unstamped arms (kArmUnstamped): PushUnstamped hands one on only while the
// owner has published kPolling, else takes it back to be stamped; Retract
// takes one back; Idle keeps a non-polling owner awake while one waits;
// StopPolling takes every one the rings hold and stamps it with a reading
// taken after it, and turns later pushes back to the caller, also under
// threads racing it; one unstamped push in kSampleEvery reads the clock.
//
// The inbox never reads a node: the submissions name made-up addresses.

#include "handoff/inbox.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace timingwheel::internal {
namespace {

using ::testing::ElementsAre;

constexpr auto kTimeout = std::chrono::seconds(10);
constexpr auto kStillBlocked = std::chrono::milliseconds(50);

// A made-up node address; the inbox only compares and hands it on.
TimerNode* Node(uintptr_t i) {
  return reinterpret_cast<TimerNode*>(uintptr_t{0x10000} + 64 * i);
}
Submission Arm(uintptr_t i, uint64_t gen = 0) {
  return {Node(i), gen, Submission::Kind::kArm, 0};
}
Submission Unlink(uintptr_t i, uint64_t gen = 0) {
  return {Node(i), gen, Submission::Kind::kUnlink, 0};
}
int64_t NoClock() {
  ADD_FAILURE() << "the clock was read";
  return 0;
}
std::vector<TimerNode*> Nodes(const std::vector<Submission>& submissions) {
  std::vector<TimerNode*> nodes;
  for (const Submission& s : submissions) nodes.push_back(s.node);
  return nodes;
}

// The owner's Take, its submissions appended to `out` in order, and its
// chunks recycled as the advancer does.
bool TakeInto(Inbox& inbox, std::vector<Submission>* out) {
  Inbox::Taken taken;
  const bool pushed = inbox.Take(&taken);
  size_t seen = 0;
  taken.ForEachChunk([&](const Submission* items, size_t n) {
    out->insert(out->end(), items, items + n);
    seen += n;
  });
  EXPECT_EQ(seen, taken.size());
  inbox.Recycle(&taken);
  EXPECT_TRUE(taken.empty());
  return pushed;
}

// The owner's Sleep in its own thread.
std::future<void> SleepAsync(Inbox* inbox) {
  return std::async(std::launch::async, [inbox] { inbox->Sleep(); });
}
bool Returns(std::future<void>& f, std::chrono::milliseconds within) {
  return f.wait_for(within) == std::future_status::ready;
}

TEST(InboxTest, TakeHandsOverALanesSubmissionsInTheOrderPushed) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Unlink(2), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Arm(3), 7));
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1), Node(2), Node(3)));
  EXPECT_EQ(taken[1].kind, Submission::Kind::kUnlink);
  taken.clear();
  TakeInto(inbox, &taken);
  EXPECT_TRUE(taken.empty()) << "taken twice";
}

TEST(InboxTest, TakeHandsOverTheSubmissionsOfEveryThread) {
  Inbox inbox;
  constexpr int kThreads = 8;
  constexpr int kEach = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&inbox, t] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE(inbox.Push(Arm(static_cast<uintptr_t>(t * kEach + i)),
                               Inbox::kNever));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  std::set<TimerNode*> seen;
  for (const Submission& s : taken) EXPECT_TRUE(seen.insert(s.node).second);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kEach));
}

TEST(InboxTest, RetractTakesBackTheLatestArmOfThisThread) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Arm(2), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Arm(3), Inbox::kNever));
  EXPECT_FALSE(inbox.Retract(Node(2), 0)) << "not the latest";
  EXPECT_TRUE(inbox.Retract(Node(3), 0));
  EXPECT_FALSE(inbox.Retract(Node(3), 0)) << "retracted twice";
  EXPECT_FALSE(inbox.Retract(Node(2), 0))
      << "latest again, but maybe marked before Node(3) came";
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1), Node(2)));
}

// Take says whether anything was pushed since the last Take, even when it
// was retracted meanwhile: the owner keeps looking while callers are busy.
TEST(InboxTest, TakeSaysWhetherSubmissionsCameRetractedOnesToo) {
  Inbox inbox;
  std::vector<Submission> taken;
  EXPECT_FALSE(TakeInto(inbox, &taken));
  ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  EXPECT_TRUE(TakeInto(inbox, &taken));
  EXPECT_FALSE(TakeInto(inbox, &taken)) << "nothing since";
  ASSERT_TRUE(inbox.Push(Arm(2), Inbox::kNever));
  ASSERT_TRUE(inbox.Retract(Node(2), 0));
  taken.clear();
  EXPECT_TRUE(TakeInto(inbox, &taken));
  EXPECT_TRUE(taken.empty());
}

// A submission taken back asks for no round: the owner must not go round
// without sleeping for it (it did: the lane kept the submission's tick).
TEST(InboxTest, ALaneEmptiedByRetractLetsTheOwnerSleep) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Arm(1), 5));
  ASSERT_TRUE(inbox.Retract(Node(1), 0));
  EXPECT_TRUE(inbox.Idle(10, 0)) << "nothing waits";
  // Not emptied by the retract: one round, then idle.
  ASSERT_TRUE(inbox.Push(Arm(2), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Arm(3), 5));
  ASSERT_TRUE(inbox.Retract(Node(3), 0));
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(2)));
  EXPECT_TRUE(inbox.Idle(10, 0));
}

TEST(InboxTest, RetractLeavesOtherArmsUnlinksAndTakenOnes) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Arm(1, /*gen=*/1), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Unlink(2), Inbox::kNever));
  EXPECT_FALSE(inbox.Retract(Node(1), 0)) << "another arm of the node";
  EXPECT_FALSE(inbox.Retract(Node(2), 0)) << "not an arm";
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_FALSE(inbox.Retract(Node(1), 1)) << "the owner has it";
}

TEST(InboxTest, RetractLooksOnlyInTheCallersOwnLane) {
  Inbox inbox;
  inbox.LaneOfThisThread();  // this thread's number, before the other's
  std::thread other([&] { ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever)); });
  other.join();
  EXPECT_FALSE(inbox.Retract(Node(1), 0)) << "another thread's lane";
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1)));
}

// Threads alive at once, up to the number of lanes, each get a lane of
// their own (sharing one cost each call its lock and cache lines crossing
// cores): a thread's number is the lowest free one, and goes back when the
// thread exits, however many threads came and went before.
TEST(InboxTest, ThreadsAliveAtOnceGetLanesOfTheirOwn) {
  Inbox inbox;
  ASSERT_GE(inbox.lanes(), 4) << "more lanes than a core's threads";
  const int lane_of_main = inbox.LaneOfThisThread();
  // Threads that took a number and exited: theirs are free again (numbers
  // given round robin would now put most new threads on main's lane).
  for (int i = 0; i < 101; ++i) {
    std::thread([&inbox] { inbox.LaneOfThisThread(); }).join();
  }
  const int others = inbox.lanes() - 1;
  std::vector<int> lanes(static_cast<size_t>(others), -1);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < others; ++t) {
    threads.emplace_back([&, t] {
      lanes[static_cast<size_t>(t)] = inbox.LaneOfThisThread();
      // Alive until every one has its number.
      ready.fetch_add(1);
      while (ready.load() < others) std::this_thread::yield();
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int> distinct(lanes.begin(), lanes.end());
  distinct.insert(lane_of_main);
  EXPECT_EQ(distinct.size(), static_cast<size_t>(inbox.lanes()));
}

// A retract of the latest push that the owner has not looked at takes it
// out of the ring (the next push reuses its slot): the owner never sees the
// pair. Once the owner looked (its mark), the retract fails: the owner has
// the push, and takes it at its next Take.
TEST(InboxTest, ARetractBeforeTheOwnerLooksLeavesNothingForIt) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  ASSERT_TRUE(inbox.Retract(Node(1), 0));
  ASSERT_TRUE(inbox.Push(Arm(2), 7));
  EXPECT_FALSE(inbox.Idle(Inbox::kNever, 0)) << "Node(2) is urgent";
  EXPECT_FALSE(inbox.Retract(Node(2), 0)) << "looked at (marked)";
  ASSERT_TRUE(inbox.Push(Arm(3), Inbox::kNever));
  ASSERT_TRUE(inbox.Retract(Node(3), 0)) << "pushed after the mark";
  std::vector<Submission> taken;
  EXPECT_TRUE(TakeInto(inbox, &taken));
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(2)));
}

// A thread that exits gives its number back with its ring: the next thread
// to take the number pushes after what it left, in order.
TEST(InboxTest, AThreadThatExitsLeavesItsRingToTheNextHolderOfItsNumber) {
  Inbox inbox;
  int first_lane = -1;
  std::thread([&] {
    first_lane = inbox.LaneOfThisThread();
    for (uintptr_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(inbox.Push(Arm(i), Inbox::kNever));
    }
  }).join();
  std::thread([&] {
    EXPECT_EQ(inbox.LaneOfThisThread(), first_lane) << "the lowest free";
    ASSERT_TRUE(inbox.Push(Arm(3), Inbox::kNever));
  }).join();
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(0), Node(1), Node(2), Node(3)));
}

// A push from a thread_local destructor that runs after the thread gave its
// number back goes to the shared ring, and is taken.
struct PushAtExit {
  Inbox* inbox = nullptr;
  bool* pushed = nullptr;
  ~PushAtExit() {
    if (inbox != nullptr) *pushed = inbox->Push(Arm(99), Inbox::kNever);
  }
};

TEST(InboxTest, APushAfterTheThreadGaveItsNumberBackIsTaken) {
  Inbox inbox;
  bool pushed = false;
  std::thread([&] {
    // Made before the number is taken, so destroyed after it is given back.
    thread_local PushAtExit at_exit;
    at_exit.inbox = &inbox;
    at_exit.pushed = &pushed;
    ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  }).join();
  EXPECT_TRUE(pushed);
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1), Node(99)));
}

// More live threads than numbers: the rest share one ring under its lock.
// Every push is taken once, a thread's in its order, unless its pusher took
// it back (which fails only if the owner took it first).
TEST(InboxTest, MoreLiveThreadsThanRingsShareOneUnderItsLock) {
  Inbox inbox;
  constexpr int kThreads = Inbox::kRings + 8;
  constexpr uintptr_t kEach = 300;
  constexpr uintptr_t kRetracted = kThreads * kEach;  // its own nodes above
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false};
  std::vector<Submission> taken;
  std::thread owner([&] {
    while (!stop.load()) TakeInto(inbox, &taken);
  });
  std::vector<std::vector<char>> retracted(kThreads,
                                           std::vector<char>(kEach, 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Alive at once: each holds its number until all have pushed.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (uintptr_t i = 0; i < kEach; ++i) {
        const uintptr_t n = static_cast<uintptr_t>(t) * kEach + i;
        EXPECT_TRUE(inbox.Push(Arm(n), Inbox::kNever));
        EXPECT_TRUE(inbox.Push(Arm(kRetracted + n), Inbox::kNever));
        retracted[static_cast<size_t>(t)][i] =
            inbox.Retract(Node(kRetracted + n), 0);
      }
      ready.fetch_add(1);
      while (ready.load() < 2 * kThreads) std::this_thread::yield();
    });
  }
  for (std::thread& t : threads) t.join();
  stop.store(true);
  owner.join();
  TakeInto(inbox, &taken);
  std::vector<uintptr_t> next(kThreads, 0);
  std::set<uintptr_t> others;
  for (const Submission& s : taken) {
    const uintptr_t n = (reinterpret_cast<uintptr_t>(s.node) - 0x10000) / 64;
    if (n >= kRetracted) {
      const uintptr_t m = n - kRetracted;
      EXPECT_FALSE(retracted[m / kEach][m % kEach]) << "retracted, yet taken";
      EXPECT_TRUE(others.insert(m).second) << "taken twice";
      continue;
    }
    EXPECT_EQ(n % kEach, next[n / kEach]++) << "out of order";
  }
  for (uintptr_t n : next) EXPECT_EQ(n, kEach);
  size_t kept = 0;
  for (const auto& thread : retracted) {
    for (char r : thread) kept += r == 0;
  }
  EXPECT_EQ(others.size(), kept) << "a push neither retracted nor taken";
}

// The producer takes back its latest pushes, and tries the ones before them,
// while the owner marks (Idle's look) and takes: each push is either taken
// back or taken by the owner, once. Taking a slot out of the ring below the
// latest push (possible when a rewound count was left unmarked: the owner may
// be reading that slot) fails this, by a slot taken twice or a data race on
// it.
TEST(InboxTest, RetractsRacingAnOwnerThatLooksAndTakesLoseNothing) {
  Inbox inbox;
  constexpr uintptr_t kPushes = 200'000;
  std::atomic<bool> stop{false};
  std::vector<Submission> taken;
  std::thread owner([&] {
    for (int round = 0; !stop.load(); ++round) {
      if (round % 2 == 0) {
        inbox.Idle(Inbox::kNever, 0);
      } else {
        TakeInto(inbox, &taken);
      }
    }
  });
  std::vector<char> retracted(kPushes, 0);
  uint64_t rng = 42;
  for (uintptr_t n = 0; n < kPushes; ++n) {
    ASSERT_TRUE(inbox.Push(Arm(n), 7));  // urgent: Idle looks at it
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    const int what = static_cast<int>(rng >> 60);
    // The latest; or it and the one before, latest first (after a rewind
    // of the latest, the one before must not be rewound).
    if (what < 8) retracted[n] = inbox.Retract(Node(n), 0);
    if (what < 4 && n > 0 && !retracted[n - 1]) {
      retracted[n - 1] = inbox.Retract(Node(n - 1), 0);
    }
  }
  stop.store(true);
  owner.join();
  TakeInto(inbox, &taken);
  std::vector<int> seen(kPushes, 0);
  for (const Submission& s : taken) {
    const uintptr_t n = (reinterpret_cast<uintptr_t>(s.node) - 0x10000) / 64;
    ASSERT_LT(n, kPushes);
    ++seen[n];
  }
  for (uintptr_t n = 0; n < kPushes; ++n) {
    ASSERT_EQ(seen[n] + retracted[n], 1) << "push " << n;
  }
}

TEST(InboxTest, ALaneOfManyChunksIsTakenInOrderAndAgainAfterRecycling) {
  Inbox inbox;
  constexpr uintptr_t kMany = 3 * RingChunk::kCapacity + 5;
  std::vector<TimerNode*> want;
  for (int round = 0; round < 3; ++round) {
    // Each round's pushes fill the chunk the last take left and new ones.
    want.clear();
    for (uintptr_t i = 0; i < kMany; ++i) {
      ASSERT_TRUE(inbox.Push(Arm(i, static_cast<uint64_t>(round)), 7));
      want.push_back(Node(i));
    }
    EXPECT_FALSE(inbox.Idle(8, 0)) << "due at 7";
    std::vector<Submission> taken;
    EXPECT_TRUE(TakeInto(inbox, &taken));
    EXPECT_EQ(Nodes(taken), want) << "round " << round;
    EXPECT_TRUE(inbox.Idle(Inbox::kNever, 0));
  }
}

// The first slot of a fresh chunk is taken back and reused; the slot below
// it, the last of the full chunk (which the owner may have passed and given
// back by then), is never looked at.
TEST(InboxTest, RetractAtTheStartOfAFreshChunk) {
  Inbox inbox;
  constexpr uintptr_t kFull = RingChunk::kCapacity;
  for (uintptr_t i = 0; i <= kFull; ++i) {
    ASSERT_TRUE(inbox.Push(Arm(i), Inbox::kNever));
  }
  EXPECT_TRUE(inbox.Retract(Node(kFull), 0));
  EXPECT_FALSE(inbox.Retract(Node(kFull - 1), 0)) << "below a rewound push";
  ASSERT_TRUE(inbox.Push(Arm(1000), Inbox::kNever));
  ASSERT_TRUE(inbox.Push(Arm(1001), Inbox::kNever));
  EXPECT_TRUE(inbox.Retract(Node(1001), 0));
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  std::vector<TimerNode*> want;
  for (uintptr_t i = 0; i < kFull; ++i) want.push_back(Node(i));
  want.push_back(Node(1000));
  EXPECT_EQ(Nodes(taken), want);
}

TEST(InboxTest, CloseHandsBackEveryChunkInOrder) {
  Inbox inbox;
  constexpr uintptr_t kMany = 2 * RingChunk::kCapacity + 1;
  std::vector<TimerNode*> want;
  for (uintptr_t i = 0; i < kMany; ++i) {
    ASSERT_TRUE(inbox.Push(Unlink(i), Inbox::kNever));
    want.push_back(Node(i));
  }
  std::vector<Submission> left;
  inbox.Close(&left);
  EXPECT_EQ(Nodes(left), want);
}

// An arm not taken keeps the owner awake, however far it is due: a slot
// holds no deadline, and its pusher may have read the owner's tick before it
// was published (so it did not wake it). A kUnlink waits for the tick.
TEST(InboxTest, IdleUnlessARingHoldsAnArm) {
  Inbox inbox(/*tick_ns=*/1'000'000);
  EXPECT_TRUE(inbox.Idle(10, 5));
  ASSERT_TRUE(inbox.Push(Unlink(1), Inbox::kNever));
  EXPECT_TRUE(inbox.Idle(10, 5)) << "an unlink waits";
  ASSERT_TRUE(inbox.Push(Node(2), 0, Submission::Kind::kArm, 0, 5000));
  EXPECT_FALSE(inbox.Idle(10, 5)) << "an arm";
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1), Node(2)));
  EXPECT_TRUE(inbox.Idle(Inbox::kNever, 5));
}

// The bug this guards against: an arm pushed while the owner worked (so it
// woke nobody) and due before the far tick the owner then published; the
// owner's look saw it, but took it for one that could wait, and slept past
// its deadline (with a ManualClock that is not moved again: for ever).
TEST(InboxTest, AnArmPushedWhileTheOwnerWorkedKeepsItFromAFarSleep) {
  Inbox inbox(/*tick_ns=*/1'000'000);
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);  // the owner works: kAwake published
  ASSERT_TRUE(inbox.Push(Node(1), 0, Submission::Kind::kArm, 0, 30'000));
  EXPECT_FALSE(inbox.Idle(60'000, 0)) << "it would sleep past tick 30,000";
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1)));
}

// A push due beyond the horizon is published without a locked instruction;
// an owner that missed it never sleeps past the horizon without the heavy
// fence, so it sees it in time. What it sees in its look: the push, which
// does not keep it awake, and is taken at its next round.
TEST(InboxTest, AFarPushDoesNotWakeTheOwnerAndIsTakenNextRound) {
  Inbox inbox(/*tick_ns=*/1'000'000);
  ASSERT_TRUE(inbox.Idle(50, 0));
  std::future<void> sleeping = SleepAsync(&inbox);
  ASSERT_TRUE(inbox.Push(Node(1), 0, Submission::Kind::kArm, 0, 100));
  EXPECT_FALSE(Returns(sleeping, kStillBlocked)) << "woken for no need";
  inbox.Wake();  // the tick came
  ASSERT_TRUE(Returns(sleeping, kTimeout));
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1)));
}

TEST(InboxTest, APushDueBeforeThePublishedTickWakesTheOwner) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Idle(100, 0));
  std::future<void> sleeping = SleepAsync(&inbox);
  ASSERT_TRUE(inbox.Push(Arm(1), 100));  // in time anyway
  EXPECT_FALSE(Returns(sleeping, kStillBlocked)) << "woken for no need";
  ASSERT_TRUE(inbox.Push(Arm(2), 99));
  EXPECT_TRUE(Returns(sleeping, kTimeout)) << "a wake-up was lost";
}

TEST(InboxTest, ALaneOfKWakeAtSubmissionsWakesTheOwner) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Idle(Inbox::kNever, 0));
  std::future<void> sleeping = SleepAsync(&inbox);
  for (size_t i = 1; i < Inbox::kWakeAt; ++i) {
    ASSERT_TRUE(inbox.Push(Unlink(i), Inbox::kNever));
  }
  EXPECT_FALSE(Returns(sleeping, kStillBlocked));
  ASSERT_TRUE(inbox.Push(Unlink(0), Inbox::kNever));
  EXPECT_TRUE(Returns(sleeping, kTimeout));
  EXPECT_FALSE(inbox.Idle(Inbox::kNever, 0)) << "a full lane is work";
}

TEST(InboxTest, WakeBeforeSleepIsNotLost) {
  Inbox inbox;
  inbox.Wake();
  std::future<void> sleeping = SleepAsync(&inbox);
  EXPECT_TRUE(Returns(sleeping, kTimeout));
}

TEST(InboxTest, CloseWakesTheOwnerRefusesPushesAndHandsBackTheLanes) {
  Inbox inbox;
  ASSERT_TRUE(inbox.Push(Unlink(1), Inbox::kNever));
  ASSERT_TRUE(inbox.Idle(Inbox::kNever, 0));
  std::future<void> sleeping = SleepAsync(&inbox);
  std::vector<Submission> left;
  inbox.Close(&left);
  EXPECT_TRUE(Returns(sleeping, kTimeout));
  EXPECT_THAT(Nodes(left), ElementsAre(Node(1)));
  EXPECT_FALSE(inbox.Push(Arm(2), 0));
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_TRUE(taken.empty());
  inbox.Sleep();  // returns at once: closed
}

TEST(InboxTest, PushersRacingASleepingOwnerLoseNothing) {
  // As the advancer: take, then publish a wake tick and sleep unless a lane
  // holds work. Each pusher's submission is due at once (tick 0), so every
  // one must wake the owner if it sleeps.
  Inbox inbox;
  constexpr int kThreads = 4;
  constexpr int kEach = 20'000;
  std::atomic<int> taken_count{0};
  std::atomic<bool> done{false};
  std::thread owner([&] {
    std::vector<Submission> taken;
    while (!done.load()) {
      TakeInto(inbox, &taken);
      taken_count += static_cast<int>(taken.size());
      taken.clear();
      if (inbox.Idle(1, 0)) inbox.Sleep();
    }
  });
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&inbox, t] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE(inbox.Push(Arm(static_cast<uintptr_t>(t * kEach + i)), 0));
      }
    });
  }
  for (std::thread& t : pushers) t.join();
  const auto give_up = std::chrono::steady_clock::now() + kTimeout;
  while (taken_count.load() < kThreads * kEach &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(taken_count.load(), kThreads * kEach) << "a wake-up was lost";
  done.store(true);
  inbox.Wake();
  owner.join();
}

namespace unstamped {

// The owner's Take while it polls: publishes kPolling.
void TakePolling(Inbox& inbox, std::vector<Submission>* out) {
  Inbox::Taken taken;
  inbox.Take(&taken, /*polling=*/true);
  taken.ForEachChunk([&](const Submission* items, size_t n) {
    out->insert(out->end(), items, items + n);
  });
  inbox.Recycle(&taken);
}

TEST(InboxTest, AnUnstampedArmGoesInOnlyWhileTheOwnerPolls) {
  Inbox inbox;
  EXPECT_FALSE(inbox.Polling());
  EXPECT_EQ(inbox.PushUnstamped(Node(1), 0, NoClock),
            Inbox::Unstamped::kStampFirst);
  std::vector<Submission> taken;
  TakePolling(inbox, &taken);
  EXPECT_TRUE(taken.empty()) << "handed back, yet taken";
  EXPECT_TRUE(inbox.Polling());
  EXPECT_EQ(inbox.PushUnstamped(Node(2), 0, NoClock),
            Inbox::Unstamped::kPushed);
  EXPECT_TRUE(inbox.Idle(Inbox::kPolling, 0)) << "a polling owner comes anyway";
  TakePolling(inbox, &taken);
  ASSERT_THAT(Nodes(taken), ElementsAre(Node(2)));
  EXPECT_EQ(taken[0].kind, Submission::Kind::kArmUnstamped);
}

// The owner takes as it polls; then Node(1)'s unstamped arm goes in.
void PushOneWhilePolling(Inbox& inbox) {
  std::vector<Submission> taken;
  TakePolling(inbox, &taken);
  ASSERT_EQ(inbox.PushUnstamped(Node(1), 0, NoClock),
            Inbox::Unstamped::kPushed);
}

TEST(InboxTest, AnOwnerThatStopsPollingDoesNotSleepOnAnUnstampedArm) {
  Inbox inbox;
  PushOneWhilePolling(inbox);
  std::vector<Submission> taken;
  EXPECT_FALSE(inbox.Idle(Inbox::kNever, 0)) << "it would wait unstamped";
  EXPECT_FALSE(inbox.Polling());
  TakeInto(inbox, &taken);
  EXPECT_THAT(Nodes(taken), ElementsAre(Node(1)));
  EXPECT_TRUE(inbox.Idle(Inbox::kNever, 0));
}

TEST(InboxTest, RetractTakesBackAnUnstampedArm) {
  Inbox inbox;
  PushOneWhilePolling(inbox);
  EXPECT_TRUE(inbox.Retract(Node(1), 0));
  EXPECT_TRUE(inbox.Idle(Inbox::kNever, 0)) << "nothing waits unstamped";
  std::vector<Submission> taken;
  TakeInto(inbox, &taken);
  EXPECT_TRUE(taken.empty());
}

TEST(InboxTest, StopPollingStampsWhatWaitsWithALaterReading) {
  Inbox inbox;
  std::vector<Submission> taken;
  TakePolling(inbox, &taken);
  ASSERT_TRUE(inbox.Push(Arm(1), Inbox::kNever));
  ASSERT_EQ(inbox.PushUnstamped(Node(2), 0, NoClock),
            Inbox::Unstamped::kPushed);
  ASSERT_EQ(inbox.PushUnstamped(Node(3), 0, NoClock),
            Inbox::Unstamped::kPushed);
  int64_t reading = 0;
  std::vector<std::pair<TimerNode*, int64_t>> stamped;
  inbox.StopPolling([&] { return ++reading; },
                    [&](TimerNode* node, int64_t now_ns) {
                      stamped.emplace_back(node, now_ns);
                    });
  EXPECT_THAT(stamped, ElementsAre(std::pair(Node(2), int64_t{1}),
                                   std::pair(Node(3), int64_t{1})));
  EXPECT_FALSE(inbox.Polling());
  EXPECT_EQ(inbox.PushUnstamped(Node(4), 0, NoClock),
            Inbox::Unstamped::kStampFirst);
  EXPECT_FALSE(inbox.Idle(Inbox::kNever, 0))
      << "what it took waits for the next Take";
  TakeInto(inbox, &taken);
  ASSERT_THAT(Nodes(taken), ElementsAre(Node(1), Node(2), Node(3)));
  for (const Submission& s : taken) {
    EXPECT_EQ(s.kind, Submission::Kind::kArm);
  }
  // Not polling: nothing to do, the clock is not read.
  inbox.StopPolling(
      NoClock, [](TimerNode*, int64_t) { ADD_FAILURE() << "stamped again"; });
}

TEST(InboxTest, OneUnstampedPushInKSampleEveryReadsTheClock) {
  Inbox inbox;
  std::vector<Submission> taken;
  TakePolling(inbox, &taken);
  int reads = 0;
  for (uint32_t i = 0; i < 3 * Inbox::kSampleEvery; ++i) {
    ASSERT_EQ(inbox.PushUnstamped(Node(i), 0, [&] { return ++reads * 10; }),
              Inbox::Unstamped::kPushed);
  }
  EXPECT_EQ(reads, 3);
  TakePolling(inbox, &taken);
  int sampled = 0;
  for (const Submission& s : taken) {
    if (s.call_ns != Submission::kNoCallTime) {
      EXPECT_EQ(s.call_ns, ++sampled * 10);
    }
  }
  EXPECT_EQ(sampled, 3);
}

// Pushers race an owner that takes as it polls, then stops polling: every
// arm pushed is taken once, and none unstamped after the stop (each was
// stamped by it, or handed back to its pusher). A pusher that read the
// published word before its submission was in, or an owner that looked at
// the lanes before it published, fails this: the stop misses the first push
// after a take.
TEST(InboxTest, PushersRacingStopPollingLeaveNoArmUnstamped) {
  for (int round = 0; round < 100; ++round) {
    Inbox inbox;
    std::vector<Submission> before;
    TakePolling(inbox, &before);
    constexpr int kThreads = 2;
    std::atomic<int> started{0};
    std::vector<std::vector<uintptr_t>> pushed(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        started.fetch_add(1);
        // Bounded, should the owner's thread not run for a while.
        for (uintptr_t i = 1; i <= 5000; ++i) {
          const uintptr_t id = static_cast<uintptr_t>(t) << 32 | i;
          const Inbox::Unstamped result =
              inbox.PushUnstamped(Node(id), 0, [] { return int64_t{0}; });
          if (result != Inbox::Unstamped::kPushed) break;
          pushed[static_cast<size_t>(t)].push_back(id);
        }
      });
    }
    while (started.load() < kThreads) std::this_thread::yield();
    for (int take = 0; take < round % 10; ++take) TakePolling(inbox, &before);
    std::set<TimerNode*> stamped;
    inbox.StopPolling([] { return int64_t{7}; },
                      [&](TimerNode* node, int64_t now_ns) {
                        EXPECT_EQ(now_ns, 7);
                        EXPECT_TRUE(stamped.insert(node).second);
                      });
    for (std::thread& thread : threads) thread.join();
    std::vector<Submission> after;
    TakeInto(inbox, &after);
    std::multiset<TimerNode*> all;
    for (const Submission& s : before) all.insert(s.node);
    for (const Submission& s : after) {
      ASSERT_EQ(s.kind, Submission::Kind::kArm) << "left unstamped";
      ASSERT_EQ(stamped.count(s.node), 1u);
      all.insert(s.node);
    }
    EXPECT_EQ(stamped.size(), after.size());
    std::multiset<TimerNode*> expected;
    for (const std::vector<uintptr_t>& ids : pushed) {
      for (uintptr_t id : ids) expected.insert(Node(id));
    }
    ASSERT_EQ(all, expected);
  }
}

}  // namespace unstamped

}  // namespace
}  // namespace timingwheel::internal
