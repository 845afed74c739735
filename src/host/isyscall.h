// Interruptible host calls (entry.S): a host syscall that the kick signal
// ends with -EINTR, however early it arrives, and the kick signal itself.
// What a task makes of them (its notify word) is kernel/task/isys.h.
#pragma once
#include <atomic>
#include <cstdint>

extern "C" long flatux_isyscall(const std::atomic<uint32_t>* notify, long nr, long a1, long a2,
                                long a3, long a4, long a5, long a6);
extern "C" void flatux_unblock_kick();

namespace flatux {

// The host signal used to make a task look at its guest signals now
// ("kick"): it interrupts guest code, and blocking host calls made with
// isys(). Guests can neither see nor block it.
constexpr int kKickSignal = 62;

}  // namespace flatux
