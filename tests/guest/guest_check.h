// Shared by the guest programs. They run natively and under flatux with
// both musl and glibc, so they use only libc calls common to both and make
// raw syscall() calls where libc might hide or pre-check what the kernel
// does.
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int guest_failures;
static const char* guest_name = "guest";

static void guest_vreport(const char* tag, const char* file, int line, const char* what,
                          const char* fmt, va_list ap) {
  // stdout carries the progress log; keep it ordered with stderr.
  fflush(stdout);
  fprintf(stderr, "%s: %s %s:%d: ", guest_name, tag, file, line);
  if (what) fprintf(stderr, "!(%s) ", what);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

__attribute__((format(printf, 4, 5), unused)) static void guest_fail(const char* file, int line,
                                                                    const char* what,
                                                                    const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  guest_vreport("FAIL", file, line, what, fmt, ap);
  va_end(ap);
  guest_failures++;
}

__attribute__((format(printf, 4, 5), noreturn, unused)) static void guest_fatal(
    const char* file, int line, const char* what, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  guest_vreport("FATAL", file, line, what, fmt, ap);
  va_end(ap);
  exit(2);
}

// A failed CHECK is recorded and the program goes on, so one run reports
// every broken case; REQUIRE stops when later checks would only cascade.
#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) guest_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)
#define REQUIRE(cond, ...)                                              \
  do {                                                                  \
    if (!(cond)) guest_fatal(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)

// For raw syscalls expected to fail: result must be -1 with errno == want.
#define CHECK_ERR(expr, want)                                               \
  do {                                                                      \
    errno = 0;                                                              \
    long guest_r_ = (long)(expr);                                           \
    int guest_e_ = errno;                                                   \
    if (guest_r_ != -1 || guest_e_ != (want))                               \
      guest_fail(__FILE__, __LINE__, NULL, "%s: got %ld errno %d (%s), want -1 %s", \
                 #expr, guest_r_, guest_e_, strerror(guest_e_), #want);     \
    else                                                                    \
      printf("  %-60s -> -1 %s\n", #expr, #want);                           \
  } while (0)

// For calls expected to succeed: logs errno when they don't.
#define CHECK_OK(expr)                                                      \
  do {                                                                      \
    errno = 0;                                                              \
    long guest_r_ = (long)(expr);                                           \
    if (guest_r_ < 0)                                                       \
      guest_fail(__FILE__, __LINE__, NULL, "%s: got %ld errno %d (%s)", #expr, \
                 guest_r_, errno, strerror(errno));                         \
  } while (0)

// The first line of a small file (a /proc or /proc/sys value) into buf,
// without its newline: 0, or -1 when it cannot be read.
#include <fcntl.h>
#include <unistd.h>
__attribute__((unused)) static int guest_read_line(const char* path, char* buf, size_t n) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t got = read(fd, buf, n - 1);
  close(fd);
  if (got <= 0) return -1;
  buf[got] = 0;
  if (buf[got - 1] == '\n') buf[got - 1] = 0;
  return 0;
}

static int guest_finish(void) {
  fflush(stdout);
  if (guest_failures) {
    fprintf(stderr, "%s: %d check(s) FAILED\n", guest_name, guest_failures);
    return 1;
  }
  printf("%s: all checks passed\n", guest_name);
  return 0;
}

#ifdef GUEST_MOUNT_SCRATCH
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
// Tests that mount: a mount namespace of their own where there is one
// (natively), so nothing mounted is seen outside, and a tmpfs of `size` on
// the scratch folder `dir`, whose real path lands in `out` (PATH_MAX).
static void guest_mount_scratch(const char* dir, char* out, const char* size) {
  REQUIRE(realpath(dir, out));
  if (unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  REQUIRE(mount("none", out, "tmpfs", 0, size) == 0, "mount: %s", strerror(errno));
}
#endif
