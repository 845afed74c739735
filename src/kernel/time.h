// Kernel time sources (raw host clock reads; the vDSO is for guests).
#pragma once
#include <cstdint>
#include <ctime>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

#define FLATUX_VERSION_STRING "0.1.0"

namespace flatux {

inline uint64_t monotonic_ns() {
  timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

inline timespec realtime_now() {
  timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return ts;
}

}  // namespace flatux
