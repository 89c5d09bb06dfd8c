// Copyright 2026 The timingwheel Authors.
// SPDX-License-Identifier: Apache-2.0
//
// loop_wheel_fuzz.cc: a libFuzzer target that drives one LoopWheel on a
// ManualClock with an operation language decoded from the input bytes, and
// checks it against a model of the contract, exactly: one thread, so every
// answer is known. Its callbacks act on the wheel too (stop, arm or reset
// other timers, run RunDue themselves), which is where a timer the core has
// handed over as due, not run yet, meets a Stop or a Reset.
//
// Each input builds a fresh wheel, runs at most kMaxOps operations on
// kSlots timer slots, then runs everything left and checks the counts. Any
// mismatch prints the wheel's options, the operations so far and the
// details, then traps.
//
// Input format (every read past the end yields 0):
//   byte 0   tick: kTicks[b % 4]; wheel_size: kWheelSizes[(b / 4) % 4];
//            b & 0x10: no spare nodes (a chunk goes back as soon as its
//            timers have ended, under the ids that named them)
//   then operations, each an opcode byte and its arguments:
//     b % 8 = 0, 1  Arm(<slot>, <delay>, <action>): a slot that is not
//                   armed gets a new timer (even slots: AfterFunc, a
//                   LoopTimer kept for the slot; odd slots: AfterFuncId),
//                   an armed one is Reset; the callback then does <action>
//             2     Stop(<slot>)
//             3     Reset(<slot>, <delay>) of an even slot's handle, or of
//                   an odd slot's id (a spent id arms nothing)
//             4, 5  Advance(<advance>), RunDue, check
//             6     RunDueAt(a time <advance> before the clock's), check
//                   against that time
//             7     TimeUntilNext, checked against the armed deadlines
//   <slot>    one byte: b % kSlots
//   <delay>   a selector byte, then (by selector % 6): 0: zero; 1: negative
//             (byte us); 2: u16 ns; 3: byte ticks; 4: a level boundary,
//             tick * wheel_size^(byte % 4), +-1 ns (byte); 5: u32 ns
//   <advance> a selector byte, then (by selector % 4): 0: 1 ns; 1: u16 ns;
//             2: byte ticks; 3: u32 ns
//   <action>  one byte a: a % 4 = 0 nothing; 1 stop slot (a / 4) % kSlots;
//             2 arm slot (a / 4) % kSlots after (a / 64) - 1 ticks (one
//             tick instead once kDueAtOnceArms arms in an operation were
//             due at once: timers that arm each other due at once run in one
//             RunDue for ever); 3 call RunDue (at most two deep)
//   integers are little-endian.
//
// The model, per slot: the deadline of its live arm, the runs it must have
// had and the runs it had. A callback checks the clock is at or past its
// arm's deadline (never early) and ends the arm. At a check with the wheel
// run to time T, an arm whose deadline rounded up to a tick is <= T must
// have run (RunDue runs everything due by the wheel's tick); Stop and Reset
// return whether the slot was armed; Pending() counts the armed slots.
//
// Debugging: TIMINGWHEEL_FUZZ_TRACE=1 prints the operations as they run;
// `loop_wheel_fuzz <file>` reruns one input.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "fuzz/fuzz_input.h"
#include "timingwheel/clock.h"
#include "timingwheel/loop_wheel.h"

namespace timingwheel {
namespace {

constexpr int kMaxOps = 96;
constexpr int kSlots = 16;
constexpr int kMaxDepth = 2;
constexpr int kDueAtOnceArms = 8;
constexpr int64_t kTicks[4] = {
    1000,                                // 1us, the minimum
    1000 * 1000,                         // 1ms, the default
    3 * 1000 * 1000 + 1,                 // 3ms + 1ns
    int64_t{3600} * 1000 * 1000 * 1000,  // 1h
};
constexpr int kWheelSizes[4] = {2, 3, 8, 20};

class LoopFuzzer {
 public:
  explicit LoopFuzzer(Input& in) : in_(in) {
    const uint8_t b = in_.Byte();
    tick_ns_ = kTicks[b % 4];
    wheel_size_ = kWheelSizes[(b / 4) % 4];
    LoopOptions options;
    options.clock = clock_;
    options.tick = absl::Nanoseconds(tick_ns_);
    options.wheel_size = wheel_size_;
    if ((b & 0x10) != 0) options.spare_timers = 0;
    config_ = absl::StrCat("tick ", tick_ns_, "ns, wheel_size ", wheel_size_,
                           ", spare_timers ", options.spare_timers);
    auto wheel = LoopWheel::Create(std::move(options));
    if (!wheel.ok()) Fail(absl::StrCat("Create: ", wheel.status().ToString()));
    wheel_ = *std::move(wheel);
    trace_ = std::getenv("TIMINGWHEEL_FUZZ_TRACE") != nullptr;
  }

  void Run() {
    for (int op = 0; op < kMaxOps && !in_.empty(); ++op) {
      const uint8_t code = in_.Byte();
      due_at_once_left_ = kDueAtOnceArms;
      switch (code % 8) {
        case 0:
        case 1: {
          const int slot = in_.Byte() % kSlots;
          const int64_t d = ReadDelay();
          const uint8_t action = in_.Byte();
          Log(absl::StrCat("arm s", slot, " ", d, "ns act ", action));
          Arm(slot, d, action);
          break;
        }
        case 2: {
          const int slot = in_.Byte() % kSlots;
          Log(absl::StrCat("stop s", slot));
          Stop(slot);
          break;
        }
        case 3: {
          const int slot = in_.Byte() % kSlots;
          const int64_t d = ReadDelay();
          Log(absl::StrCat("reset s", slot, " ", d, "ns"));
          Reset(slot, d);
          break;
        }
        case 4:
        case 5: {
          const int64_t by = ReadAdvance();
          Log(absl::StrCat("advance ", by, "ns, RunDue"));
          clock_->Advance(absl::Nanoseconds(by));
          wheel_->RunDue();
          Check(NowNs());
          break;
        }
        case 6: {
          const int64_t back = std::min(ReadAdvance(), NowNs());
          Log(absl::StrCat("RunDueAt(now - ", back, "ns)"));
          wheel_->RunDueAt(absl::Nanoseconds(NowNs() - back));
          Check(NowNs() - back);
          break;
        }
        default:
          Log("TimeUntilNext");
          CheckTimeUntilNext();
      }
    }
    // Everything left runs, and every count adds up; the callbacks arm no
    // more (two that arm each other would never end).
    draining_ = true;
    for (int turns = 0;
         std::optional<absl::Duration> wait = wheel_->TimeUntilNext();
         ++turns) {
      if (turns > 100000) Fail("the wheel never ran out of timers");
      clock_->Advance(*wait);
      wheel_->RunDue();
    }
    Check(NowNs());
    for (int i = 0; i < kSlots; ++i) {
      const Slot& slot = slots_[i];
      if (slot.armed.has_value()) Fail(absl::StrCat("s", i, " never ran"));
      if (slot.runs != slot.expected_runs) {
        Fail(absl::StrCat("s", i, " ran ", slot.runs, " times, expected ",
                          slot.expected_runs));
      }
    }
    if (wheel_->Pending() != 0) {
      Fail(absl::StrCat("Pending() ", wheel_->Pending(), " with none armed"));
    }
  }

 private:
  struct Slot {
    LoopTimer timer;  // even slots
    LoopTimerId id;   // odd slots: the live or last id
    uint8_t action = 0;
    bool running = false;          // its callback runs
    std::optional<int64_t> armed;  // the live arm's deadline, in ns
    int runs = 0;
    int expected_runs = 0;
  };

  int64_t NowNs() const { return absl::ToInt64Nanoseconds(clock_->Now()); }
  // The tick at which a deadline is due: rounded up.
  int64_t DueTickNs(int64_t deadline_ns) const {
    if (deadline_ns <= 0) return 0;
    return (deadline_ns + tick_ns_ - 1) / tick_ns_ * tick_ns_;
  }

  int64_t ReadDelay() {
    const uint8_t selector = in_.Byte();
    switch (selector % 6) {
      case 0:
        return 0;
      case 1:
        return -static_cast<int64_t>(in_.Byte()) * 1000;
      case 2:
        return static_cast<int64_t>(in_.Uint(2));
      case 3:
        return static_cast<int64_t>(in_.Byte()) * tick_ns_;
      case 4: {
        const uint8_t b = in_.Byte();
        int64_t boundary = tick_ns_;
        for (int k = 0; k < b % 4; ++k) boundary *= wheel_size_;
        return boundary + static_cast<int64_t>(in_.Byte() % 3) - 1;
      }
      default:
        return static_cast<int64_t>(in_.Uint(4));
    }
  }
  int64_t ReadAdvance() {
    const uint8_t selector = in_.Byte();
    switch (selector % 4) {
      case 0:
        return 1;
      case 1:
        return static_cast<int64_t>(in_.Uint(2));
      case 2:
        return static_cast<int64_t>(in_.Byte()) * tick_ns_;
      default:
        return static_cast<int64_t>(in_.Uint(4));
    }
  }

  // Arms `index` after `d_ns` (a new timer, or a Reset of the live one).
  void Arm(int index, int64_t d_ns, uint8_t action) {
    Slot& slot = slots_[index];
    slot.action = action;
    const bool was = slot.armed.has_value();
    const absl::Duration d = absl::Nanoseconds(d_ns);
    if (index % 2 == 0 && slot.timer) {
      Expect(slot.timer.Reset(d), was, index, "Reset");
    } else if (index % 2 == 0) {
      slot.timer = Made(wheel_->AfterFunc(d, Callback(index)), index);
    } else if (was) {
      Expect(wheel_->Reset(slot.id, d), true, index, "Reset(id)");
    } else if (slot.running) {
      // A RunDue its callback called came to this Arm: during its own run
      // the id arms it again, as a handle's Reset does.
      Expect(wheel_->Reset(slot.id, d), false, index, "Reset(running id)");
    } else {
      Expect(wheel_->Reset(slot.id, d), false, index, "Reset(spent id)");
      slot.id = Made(wheel_->AfterFuncId(d, Callback(index)), index);
    }
    if (!was) ++slot.expected_runs;
    slot.armed = NowNs() + std::max<int64_t>(d_ns, 0);
  }
  void Stop(int index) {
    Slot& slot = slots_[index];
    const bool was = slot.armed.has_value();
    const bool got = index % 2 == 0 ? slot.timer.Stop() : wheel_->Stop(slot.id);
    Expect(got, was, index, "Stop");
    if (was) --slot.expected_runs;
    slot.armed.reset();
  }
  // A Reset that arms nothing new: of a live arm, or of a spent id.
  void Reset(int index, int64_t d_ns) {
    Slot& slot = slots_[index];
    if (index % 2 == 0 || slot.armed.has_value()) {
      Arm(index, d_ns, slot.action);
    } else {
      Expect(wheel_->Reset(slot.id, absl::Nanoseconds(d_ns)), false, index,
             "Reset(spent id)");
    }
  }

  template <class T>
  T Made(absl::StatusOr<T> made, int index) {
    if (!made.ok()) {
      Fail(absl::StrCat("s", index, ": ", made.status().ToString()));
    }
    return *std::move(made);
  }

  absl::AnyInvocable<void()> Callback(int index) {
    return [this, index] { Ran(index); };
  }
  void Ran(int index) {
    Slot& slot = slots_[index];
    if (!slot.armed.has_value()) Fail(absl::StrCat("s", index, " ran unarmed"));
    if (NowNs() < *slot.armed) {
      Fail(absl::StrCat("s", index, " ran early: at ", NowNs(), "ns, deadline ",
                        *slot.armed, "ns"));
    }
    ++slot.runs;
    slot.armed.reset();
    slot.running = true;
    Act(index);
    slots_[index].running = false;
  }
  // What the callback of `index` does after its run is counted.
  void Act(int index) {
    const uint8_t a = slots_[index].action;
    const int other = (a / 4) % kSlots;
    switch (a % 4) {
      case 1:
        Log(absl::StrCat("  s", index, " stops s", other));
        Stop(other);
        break;
      case 2: {
        // A re-arm of itself is a Reset's.
        if (other == index || draining_) break;
        // Timers that arm each other due at once would run in one RunDue
        // for ever (as documented): a few such arms in each operation.
        int64_t d_ns = (a / 64 - 1) * tick_ns_;
        if (d_ns <= 0 && --due_at_once_left_ < 0) d_ns = tick_ns_;
        Log(absl::StrCat("  s", index, " arms s", other));
        Arm(other, d_ns, slots_[other].action);
        break;
      }
      case 3:
        if (depth_ >= kMaxDepth) break;
        Log(absl::StrCat("  s", index, " calls RunDue"));
        ++depth_;
        wheel_->RunDue();
        --depth_;
        break;
      default:
        break;
    }
  }

  // The wheel has run to `t_ns`: every arm due by its tick there ran.
  void Check(int64_t t_ns) {
    const int64_t tick_end = t_ns / tick_ns_ * tick_ns_;
    int64_t armed = 0;
    for (int i = 0; i < kSlots; ++i) {
      const Slot& slot = slots_[i];
      if (!slot.armed.has_value()) continue;
      ++armed;
      if (DueTickNs(*slot.armed) <= tick_end) {
        Fail(absl::StrCat("s", i, " due at ", *slot.armed, "ns did not run by ",
                          t_ns, "ns"));
      }
    }
    if (wheel_->Pending() != armed) {
      Fail(absl::StrCat("Pending() ", wheel_->Pending(), ", armed ", armed));
    }
  }
  // TimeUntilNext: none exactly when nothing is armed, and never past the
  // tick the first armed deadline is due at.
  void CheckTimeUntilNext() {
    const std::optional<absl::Duration> wait = wheel_->TimeUntilNext();
    std::optional<int64_t> first;
    for (const Slot& slot : slots_) {
      if (slot.armed.has_value() && (!first || *slot.armed < *first)) {
        first = slot.armed;
      }
    }
    if (wait.has_value() != first.has_value()) {
      Fail(absl::StrCat("TimeUntilNext ",
                        wait ? absl::FormatDuration(*wait) : "none",
                        first ? " with timers armed" : " with none armed"));
    }
    if (wait && NowNs() + absl::ToInt64Nanoseconds(*wait) >
                    std::max(NowNs(), DueTickNs(*first))) {
      Fail(absl::StrCat("TimeUntilNext ", absl::FormatDuration(*wait),
                        " is past the first deadline's tick, ",
                        DueTickNs(*first), "ns"));
    }
  }

  void Expect(bool got, bool want, int index, const char* what) {
    if (got != want) {
      Fail(absl::StrCat("s", index, ": ", what, " returned ", got,
                        ", expected ", want));
    }
  }
  void Log(const std::string& line) {
    ops_.push_back(line);
    if (trace_) std::fprintf(stderr, "%s\n", line.c_str());
  }
  [[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "loop_wheel_fuzz: %s\n  wheel: %s\n  operations:\n",
                 what.c_str(), config_.c_str());
    for (const std::string& op : ops_) {
      std::fprintf(stderr, "    %s\n", op.c_str());
    }
    __builtin_trap();
  }

  Input& in_;
  const std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  int64_t tick_ns_ = 0;
  int wheel_size_ = 0;
  std::string config_;
  bool trace_ = false;
  std::unique_ptr<LoopWheel> wheel_;
  Slot slots_[kSlots];
  int depth_ = 0;
  int due_at_once_left_ = 0;  // callbacks' arms due at once, this operation
  bool draining_ = false;     // the operations are done: Run's last loop
  std::vector<std::string> ops_;
};

}  // namespace
}  // namespace timingwheel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  timingwheel::Input in(data, size);
  timingwheel::LoopFuzzer fuzzer(in);
  fuzzer.Run();
  return 0;
}
