#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# make_corpus.py: writes the seed corpora of timingwheel_fuzz into
# test/fuzz/corpus/ and of loop_wheel_fuzz into test/fuzz/loop_corpus/ (one
# small binary file per scenario). The byte formats are documented at the
# top of each target; the helpers below mirror them.
#
# Usage: test/fuzz/make_corpus.py   (rewrites the files; commit the result)

import os
import struct

# Header byte 0: index into kTicks; byte 1: into kWheelSizes.
TICK_1US, TICK_ODD, TICK_1MS, TICK_3MS1, TICK_1S, TICK_1H = 0, 1, 2, 4, 5, 6
WS = {2: 0, 3: 1, 4: 2, 5: 3, 6: 4, 7: 5, 8: 6, 20: 7}


def header(tick, wheel_size, workers=1, max_pending=0):
    b2 = (workers - 1) & 3
    if max_pending:
        b2 |= (11 + max_pending) << 4
    return bytes([tick, WS[wheel_size], b2])


def u16(v):
    return struct.pack('<H', v)


def u32(v):
    return struct.pack('<I', v)


def u64(v):
    return struct.pack('<Q', v)


# <delay>
def zero():
    return bytes([0])


def negative(ns):
    return bytes([1]) + u16(ns - 1)


def subtick(v):
    return bytes([2]) + u32(v)


def boundary(k, dticks=0, dns=0):
    return bytes([3, k, (dticks + 1) + 3 * (dns + 1)])


def ticks(n):
    return bytes([4]) + u16(n)


def nanos(n):
    return bytes([5]) + u32(n)


def years_upto_100(v):
    return bytes([6]) + u64(v)


def hundred_years(dns=0):
    return bytes([7, dns + 1])


def past_100_years(v):
    return bytes([8]) + u64(v)


def infinite():
    return bytes([9])


# Operations.
def after(delay):
    return bytes([0]) + delay


def every(delay):
    return bytes([2]) + delay


def every_self_stop(delay):  # its callback stops it on its first run
    return bytes([32]) + delay


def stop(t):
    return bytes([3, t])


def reset(t, delay):
    return bytes([4, t]) + delay


def adv_ns(n):
    return bytes([5, 6]) + u32(n)


def adv_ticks(n):
    return bytes([5, 7]) + u16(n)


def adv_boundary(k, dticks=0, dns=0):
    return bytes([5, 3, k, (dticks + 1) + 3 * (dns + 1)])


def adv_days(n):
    return bytes([5, 4, n - 1])


def adv_years(n):
    return bytes([5, 5, n - 1])


def adv_next(variant):  # 0: deadline-1ns, 1: deadline, 2: its tick, 3: tick-1
    return bytes([7, variant])


def check():
    return bytes([8])


def tick():
    return adv_ticks(1)


def nowait_ticks(n):  # advance without waiting for the wheel
    return bytes([9, 7]) + u16(n)


def nowait_ns(n):
    return bytes([9, 6]) + u32(n)


SHUTDOWN = bytes([0xFF])
SHUTDOWN_NOWAIT = bytes([0xFE])  # races the flushes and the workers

SEEDS = {
    # DESIGN.md's worked example: tick 1ms, wheel_size 4; 3, 9 and 40 ms.
    'worked_example': header(TICK_1MS, 4) + after(ticks(3)) + after(ticks(9)) +
    after(ticks(40)) + adv_ticks(3) + adv_ticks(5) + adv_ticks(1) +
    adv_ticks(23) + adv_ticks(8),
    # Stop and Reset of pending, fired and stopped timers.
    'stop_reset': header(TICK_1MS, 3, workers=2) + after(ticks(5)) +
    after(subtick(1234)) + after(boundary(2)) + stop(0) + stop(0) +
    reset(0, ticks(2)) + reset(1, zero()) + reset(2, negative(7)) +
    adv_next(0) + adv_next(1) + reset(0, ticks(1)) + adv_next(2) +
    stop(1) + reset(1, boundary(3, 1)) + adv_boundary(3, 1, 1),
    # Periodic timers: sub-tick period, tick period, level boundary period.
    'every': header(TICK_ODD, 2, workers=3) + every(subtick(100)) +
    every(ticks(1)) + every(boundary(4, -1)) + adv_ticks(1) + tick() +
    adv_boundary(4) + reset(0, zero()) + stop(1) + adv_ticks(7) +
    reset(1, ticks(2)) + adv_next(3) + adv_next(2) + stop(2) + every(zero()) +
    every(negative(3)) + every(infinite()),
    # Deadlines around and past the supported range.
    'huge': header(TICK_1US, 2) + after(hundred_years(1)) +
    after(hundred_years(0)) + after(hundred_years(-1)) +
    after(years_upto_100(123456789012345678)) + after(past_100_years(0)) +
    after(past_100_years(5 * 10**18)) + after(infinite()) +
    reset(0, infinite()) + adv_years(8) + adv_years(8) + adv_days(200) +
    adv_next(1) + after(hundred_years(0)) + adv_years(8) * 12 +
    after(zero()) + after(ticks(1)) + check(),
    # Every level boundary +-1 tick with wheel_size 2 and 1us ticks.
    'boundaries': header(TICK_1US, 2, workers=2) +
    b''.join(after(boundary(k, d)) for k in (0, 1, 5, 9, 13) for d in (-1, 0, 1)) +
    b''.join(adv_next(v) for v in (0, 1, 2, 3) * 5),
    # Shutdown with timers pending, then every operation after it.
    'shutdown': header(TICK_3MS1, 5, workers=2) + after(ticks(3)) +
    every(ticks(2)) + after(zero()) + adv_ticks(2) + SHUTDOWN + stop(0) +
    reset(1, ticks(1)) + after(ticks(1)) + adv_ticks(10) + SHUTDOWN,
    # max_pending = 2, with timers dispatched at once.
    'max_pending': header(TICK_1MS, 8, workers=2, max_pending=2) +
    after(ticks(4)) + after(zero()) + after(ticks(4)) + after(ticks(1)) +
    check() + after(ticks(1)) + stop(0) + after(ticks(1)) + adv_ticks(4) +
    after(negative(1)) + after(zero()) + check(),
    # Stop and Reset racing a dispatch to the workers.
    'immediate_races': header(TICK_1H, 20, workers=3) + after(zero()) +
    stop(0) + after(negative(100)) + reset(1, zero()) + reset(1, zero()) +
    after(zero()) + reset(2, ticks(1)) + stop(2) + after(nanos(1)) +
    tick() + reset(3, negative(1)) + stop(3) + check(),
    # Advances without waiting: Stop and Reset race flushes and cascades.
    'nowait_races': header(TICK_1US, 2, workers=3) +
    b''.join(after(ticks(n)) for n in (1, 2, 3, 5, 8, 13, 21, 34)) +
    nowait_ticks(2) + stop(1) + stop(2) + nowait_ticks(6) + reset(3, ticks(4)) +
    stop(4) + nowait_ns(20500) + stop(5) + reset(6, zero()) + stop(7) +
    check() + nowait_ticks(40) + check(),
    # Shutdown racing timers dispatched at once and buckets being flushed.
    'shutdown_race': header(TICK_ODD, 3, workers=1) +
    b''.join(after(zero()) for _ in range(6)) +
    b''.join(after(ticks(n)) for n in (1, 2, 4, 9)) + nowait_ticks(5) +
    SHUTDOWN_NOWAIT + after(zero()) + stop(0) + adv_ticks(3),
    # Regressions: Reset of a timer linked in a bucket did not unlink it
    # (WheelLevel::Remove ignored kAnyGeneration, fixed in 6c5d2d0): its
    # bucket neighbour was lost, and a reset periodic timer leaked its node
    # and the whole engine. Both found by this fuzzer.
    'regression_reset_linked': header(TICK_1MS, 20) + after(ticks(5)) +
    after(ticks(5)) + reset(0, ticks(5)) + adv_ticks(5),
    'regression_reset_periodic_leak': header(TICK_ODD, 2, workers=3) +
    every(subtick(100)) + reset(0, zero()) + after(nanos(7)),
    # max_pending while the workers start timers: Reset of a started timer,
    # Stop of its new arm, then AfterFunc (the pending count may lag).
    'max_pending_race': header(TICK_1MS, 8, workers=2, max_pending=2) +
    bytes([5, 0]) + after(zero()) * 3 + reset(0, zero()) + stop(0) +
    after(zero()) + check(),
    # A periodic timer that stops itself from its first run, then is Reset.
    'self_stop': header(TICK_1MS, 4, workers=2) +
    every_self_stop(ticks(3)) + every(ticks(2)) + adv_ticks(3) +
    adv_ticks(3) + reset(0, ticks(1)) + adv_ticks(1) + adv_ticks(1) +
    stop(0) + stop(1),
}


# loop_wheel_fuzz (its format at the top of loop_wheel_fuzz.cc): byte 0,
# then operations; even slots hold a LoopTimer, odd ones an id.
L_TICK_1US, L_TICK_1MS, L_TICK_3MS1, L_TICK_1H = 0, 1, 2, 3
L_WS = {2: 0, 3: 1, 8: 2, 20: 3}


def l_header(tick, wheel_size, no_spare=False):
    return bytes([tick + 4 * L_WS[wheel_size] + (0x10 if no_spare else 0)])


def l_ticks(n):
    return bytes([3, n])


def l_boundary(k, d=0):
    return bytes([4, k, d + 1])


def l_arm(slot, delay, action=0):
    return bytes([0, slot]) + delay + bytes([action])


def l_stop(slot):
    return bytes([2, slot])


def l_reset(slot, delay):
    return bytes([3, slot]) + delay


def l_adv_ticks(n):
    return bytes([4, 2, n])


def l_run_due_at_ns_before(ns):
    return bytes([6, 1]) + u16(ns)


# Actions: what a timer's callback does when it runs.
def a_stop(slot):
    return 1 + 4 * slot


def a_arm(slot, ticks_after):  # ticks_after in -1..2
    return 2 + 4 * slot + 64 * (ticks_after + 1)


A_RUN_DUE = 3

LOOP_SEEDS = {
    # Timers due in one tick stop and reset each other: the ones not run
    # yet are out of the core, handed over as due.
    'same_tick': l_header(L_TICK_1MS, 20) +
    l_arm(0, l_ticks(3), a_stop(1)) + l_arm(1, l_ticks(3), a_stop(3)) +
    l_arm(2, l_ticks(3), a_arm(5, 0)) + l_arm(3, l_ticks(3), a_stop(0)) +
    l_arm(5, l_ticks(3), a_arm(2, -1)) + l_adv_ticks(3) + l_adv_ticks(5),
    # Level boundaries, cascades spread over ticks, stops meanwhile.
    'cascades': l_header(L_TICK_1US, 2, no_spare=True) +
    b''.join(l_arm(i, l_boundary(i % 4, i % 3 - 1), a_stop((i + 3) % 16))
             for i in range(12)) +
    l_stop(4) + l_adv_ticks(3) + l_reset(7, l_ticks(2)) +
    l_adv_ticks(9) + l_adv_ticks(30) + l_stop(9),
    # Callbacks that call RunDue and arm timers due at once.
    'nested': l_header(L_TICK_3MS1, 3) + l_arm(0, l_ticks(1), A_RUN_DUE) +
    l_arm(1, l_ticks(1), a_arm(2, -1)) + l_arm(2, l_ticks(1), A_RUN_DUE) +
    l_arm(3, l_ticks(1), a_arm(0, 0)) + l_adv_ticks(1) + l_adv_ticks(1),
    # RunDueAt a cached time before the clock's, and TimeUntilNext.
    'cached_time': l_header(L_TICK_1H, 8) + l_arm(1, l_ticks(1)) +
    l_arm(2, l_ticks(2)) + bytes([7]) + l_adv_ticks(1) +
    l_run_due_at_ns_before(500) + bytes([7]) + l_adv_ticks(1) + bytes([7]),
}


def write(folder, seeds):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), folder)
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print(f'wrote {len(seeds)} seeds to {out}')


def main():
    write('corpus', SEEDS)
    write('loop_corpus', LOOP_SEEDS)


if __name__ == '__main__':
    main()
