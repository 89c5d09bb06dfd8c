// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// handoff_benchmark.cc: the hand-off of the threaded wheel (the Inbox of
// lib/handoff/inbox.h, per-thread single-producer rings, no lock on a push)
// measured against moodycamel::ConcurrentQueue (Debian's
// libconcurrentqueue-dev, per-producer sub-queues: the same idea, lock-free),
// to decide issue 23: use moodycamel's queue unless our rings are measurably
// faster or the local reclaim (Inbox::Retract) needs what it cannot give.
// The README's "Dependencies" section states the figures and the decision.
//
// Both carry the Submission of inbox.h ({node pointer, 64-bit generation,
// kind}), with made-up node addresses as in test/inbox_test.cc: neither
// reads a node. Each scenario is a function template registered once per
// implementation, so that the output prints the two side by side:
//   * Rings:      internal::Inbox; producers Push with tick Inbox::kNever
//                 (no hurry, so no wake-up but the one a ring reaching
//                 kWakeAt submissions makes, as in the wheel); the consumer
//                 claims every slot pushed since its last take;
//   * MoodyCamel: moodycamel::ConcurrentQueue<Submission> used the way its
//                 README calls fastest: one ProducerToken per producer
//                 thread, enqueue(token, item) per item (the wheel's callers
//                 submit one at a time, so no enqueue_bulk), and the
//                 consumer's try_dequeue_bulk(ConsumerToken, ...) 1024 at a
//                 time. It has no wake-up path: no owner sleeps here.
//
// Scenarios (P producer threads, P = 1 and 2, each pushing kPerProducer
// items; the consumer is the benchmark's own thread):
//   BM_HandOff        each producer pushes kPerProducer kArm submissions;
//                     the consumer drains in bulk until it has seen all of
//                     them (it checks their count and the sum of their
//                     generations).
//   BM_PushRetract    the AfterFunc + Stop pattern before the owner took
//                     the arm. Rings: Push, then Retract at once: the pair
//                     never reaches the owner, whose Takes find nothing;
//                     when the consumer took the arm in between, the Stop
//                     pushes a kUnlink instead, as the wheel's does.
//                     MoodyCamel offers no removal by the producer (no peek,
//                     no erase; try_dequeue_from_producer takes the oldest
//                     item of a sub-queue, not the latest), so a hand-off
//                     built on it would push the kArm and then a cancel
//                     record (a kUnlink of the same arm), and the owner
//                     would drain both and match them. That is what runs
//                     here, so that one item = one push + retract (or
//                     cancel) handed over in both; the MoodyCamel figure
//                     counts the owner's dequeue of two records, not the
//                     work of applying them (reading each node's state
//                     word, not measured: the nodes are made up), and so
//                     flatters it. records_per_item shows what reached the
//                     consumer.
//
// Threads: producers and consumer run at once; the consumer yields when it
// finds nothing, as do spinning producers, since a 2-core machine runs P = 2
// with three threads. One iteration hands over P * kPerProducer items; its
// time (manual) runs from the release of the producers, started and waiting
// beforehand, to the consumer's last item. Counters: items_per_second (all
// producers together), ns_per_item (the iteration's wall time over its
// items) and push_cpu_ns (the producers' thread CPU time per item: the
// callers' cost, steadier than wall time on a busy machine).
// The queues live across iterations (a steady state, as in the wheel).
//
// Run it from a Release build, e.g.
//   build/release/benchmark/handoff_benchmark --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "concurrentqueue.h"
#include "handoff/inbox.h"

namespace {

using ::timingwheel::internal::Inbox;
using ::timingwheel::internal::Submission;
using ::timingwheel::internal::TimerNode;

constexpr int64_t kPerProducer = int64_t{1} << 16;

// A made-up node address; neither queue reads it.
TimerNode* Node(uint64_t i) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): never dereferenced
  return reinterpret_cast<TimerNode*>(uintptr_t{0x10000} + 64 * i);
}
// This thread's CPU time, in ns: what a producer spent pushing, whether or
// not the scheduler let it run meanwhile (the machine may be shared).
int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The Stop of arm s.gen of s.node.
Submission Unlink(const Submission& s) {
  return {s.node, s.gen, Submission::Kind::kUnlink, 0};
}

// The rings of the threaded wheel.
struct Rings {
  class Producer {
   public:
    explicit Producer(Rings* q) : inbox_(&q->inbox) {}
    bool Push(const Submission& s) { return inbox_->Push(s, Inbox::kNever); }
    // Push + Retract; when the owner took the arm first, the Stop pushes a
    // kUnlink instead, as the wheel's does. Returns the records handed to
    // the owner (0 or 2), -1 if refused.
    int PushRetract(const Submission& s) {
      if (!inbox_->Push(s, Inbox::kNever)) return -1;
      if (inbox_->Retract(s.node, s.gen)) return 0;
      return inbox_->Push(Unlink(s), Inbox::kNever) ? 2 : -1;
    }

   private:
    Inbox* inbox_;
  };
  class Consumer {
   public:
    explicit Consumer(Rings* q) : inbox_(&q->inbox) {}
    // Takes what every ring holds; calls `f` on each submission.
    template <typename F>
    size_t Drain(F&& f) {
      Inbox::Taken taken;
      inbox_->Take(&taken);
      taken.ForEachChunk([&](const Submission* items, size_t n) {
        for (size_t i = 0; i < n; ++i) f(items[i]);
      });
      const size_t count = taken.size();
      inbox_->Recycle(&taken);
      return count;
    }

   private:
    Inbox* inbox_;
  };
  Inbox inbox;
};

// moodycamel::ConcurrentQueue, with tokens and bulk dequeues.
struct MoodyCamel {
  class Producer {
   public:
    explicit Producer(MoodyCamel* q) : queue_(&q->queue), token_(q->queue) {}
    bool Push(const Submission& s) { return queue_->enqueue(token_, s); }
    // No removal: the arm, then a cancel record for the owner to match.
    int PushRetract(const Submission& s) {
      return queue_->enqueue(token_, s) && queue_->enqueue(token_, Unlink(s))
                 ? 2
                 : -1;
    }

   private:
    moodycamel::ConcurrentQueue<Submission>* queue_;
    moodycamel::ProducerToken token_;
  };
  class Consumer {
   public:
    explicit Consumer(MoodyCamel* q) : queue_(&q->queue), token_(q->queue) {}
    template <typename F>
    size_t Drain(F&& f) {
      size_t total = 0;
      size_t n;
      while ((n = queue_->try_dequeue_bulk(token_, buffer_, kBulk)) > 0) {
        for (size_t i = 0; i < n; ++i) f(buffer_[i]);
        total += n;
      }
      return total;
    }

   private:
    static constexpr size_t kBulk = 1024;
    moodycamel::ConcurrentQueue<Submission>* queue_;
    moodycamel::ConsumerToken token_;
    Submission buffer_[kBulk];
  };
  moodycamel::ConcurrentQueue<Submission> queue{
      static_cast<size_t>(4 * kPerProducer)};
};

enum class Op { kHandOff, kPushRetract };

// Runs P = state.range(0) producers doing `op` kPerProducer times each
// against the consumer on this thread, once per iteration.
template <typename Q>
void Run(benchmark::State& state, Op op) {
  const int producers = static_cast<int>(state.range(0));
  const int64_t items = producers * kPerProducer;
  // Made once: a steady state across iterations, as in the wheel.
  auto queue = std::make_unique<Q>();
  typename Q::Consumer consumer(queue.get());
  int64_t failures = 0;
  int64_t handed_records = 0;
  int64_t push_cpu_ns = 0;
  double seconds = 0;

  for (auto _ : state) {
    std::atomic<int> ready{0};
    std::atomic<bool> start{false};
    std::atomic<int> done{0};
    std::atomic<int64_t> failed{0};
    // What the producers handed over: records, and the sum of their arms'
    // generations.
    std::atomic<int64_t> records{0};
    std::atomic<uint64_t> arm_sum{0};
    std::atomic<int64_t> cpu_ns{0};
    std::vector<std::thread> threads;
    threads.reserve(producers);
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        typename Q::Producer producer(queue.get());
        ready.fetch_add(1);
        while (!start.load(std::memory_order_acquire)) {
          std::this_thread::yield();
        }
        const int64_t cpu0 = ThreadCpuNanos();
        int64_t bad = 0;
        int64_t out = 0;
        uint64_t sum = 0;
        const uint64_t first = static_cast<uint64_t>(p * kPerProducer);
        for (int64_t i = 0; i < kPerProducer; ++i) {
          const uint64_t gen = first + static_cast<uint64_t>(i);
          const Submission s{Node(gen), gen, Submission::Kind::kArm, 0};
          const int r = op == Op::kHandOff ? (producer.Push(s) ? 1 : -1)
                                           : producer.PushRetract(s);
          bad += r < 0 ? 1 : 0;
          out += r > 0 ? r : 0;
          sum += r > 0 ? gen : 0;
        }
        cpu_ns.fetch_add(ThreadCpuNanos() - cpu0);
        failed.fetch_add(bad);
        records.fetch_add(out);
        arm_sum.fetch_add(sum);
        done.fetch_add(1, std::memory_order_release);
      });
    }
    while (ready.load() < producers) std::this_thread::yield();

    int64_t seen = 0;
    uint64_t gen_sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    start.store(true, std::memory_order_release);
    // Until every producer is done and every record they handed over is
    // seen (for Rings' push + retract, few or none: the consumer polls
    // until the end).
    while (true) {
      const bool all_done = done.load(std::memory_order_acquire) == producers;
      const size_t n = consumer.Drain([&](const Submission& s) {
        gen_sum += s.kind == Submission::Kind::kArm ? s.gen : 0;
      });
      seen += static_cast<int64_t>(n);
      if (all_done && seen >= records.load()) break;
      if (n == 0) std::this_thread::yield();
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (std::thread& t : threads) t.join();

    const double elapsed = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
    failures += failed.load();
    handed_records += seen;
    push_cpu_ns += cpu_ns.load();
    // Every arm handed over seen once.
    if (seen != records.load() || gen_sum != arm_sum.load()) ++failures;
  }

  const double handed =
      static_cast<double>(state.iterations()) * static_cast<double>(items);
  state.SetItemsProcessed(static_cast<int64_t>(handed));
  state.counters["ns_per_item"] = seconds * 1e9 / handed;
  // The producers' own CPU time per item: the caller's cost, which the
  // scheduler's delays on a shared machine do not inflate.
  state.counters["push_cpu_ns"] = static_cast<double>(push_cpu_ns) / handed;
  // Records the consumer dequeued per item: 1 for a hand-off; for push +
  // retract 2 for MoodyCamel, and for Rings twice the share of retracts
  // that came too late (the consumer had taken the arm).
  state.counters["records_per_item"] =
      static_cast<double>(handed_records) / handed;
  state.counters["failures"] = static_cast<double>(failures);
  if (failures != 0) state.SkipWithError("items lost, doubled or refused");
}

template <typename Q>
void BM_HandOff(benchmark::State& state) {
  Run<Q>(state, Op::kHandOff);
}
template <typename Q>
void BM_PushRetract(benchmark::State& state) {
  Run<Q>(state, Op::kPushRetract);
}

BENCHMARK_TEMPLATE(BM_HandOff, Rings)
    ->ArgName("producers")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_HandOff, MoodyCamel)
    ->ArgName("producers")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_PushRetract, Rings)
    ->ArgName("producers")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_PushRetract, MoodyCamel)
    ->ArgName("producers")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
