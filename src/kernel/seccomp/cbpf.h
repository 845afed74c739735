// Classic BPF, as seccomp filters use it: the checks Linux makes before it
// accepts a program (bpf_check_classic, then seccomp_check_filter's list
// of instructions a filter may use), and the machine that runs one over a
// syscall's seccomp_data. Freestanding: no allocation, no host calls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <linux/filter.h>
#include <linux/seccomp.h>

namespace flatux {

constexpr size_t kBpfMaxInsns = 4096;  // BPF_MAXINSNS
constexpr int kBpfMemWords = 16;       // BPF_MEMWORDS

// 0 when `prog` (len instructions) is a valid seccomp filter, else
// -EINVAL. Rewrites what seccomp turns into other loads (BPF_LEN: the size
// of seccomp_data), as Linux does, so the machine never meets it.
long cbpf_check_seccomp(sock_filter* prog, size_t len);

// Runs a checked program over `data`; the value its RET gives.
uint32_t cbpf_run(const sock_filter* prog, size_t len, const seccomp_data& data);

}  // namespace flatux
