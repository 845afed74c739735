// The test's folder and paths inside it, for tests that make their files
// under one folder (`dir`, set by the test before the first at()).
#pragma once
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];

// DIR/rel, in a rotating set of buffers so that several fit in one call.
static const char* at(const char* fmt, ...) {
  static char bufs[8][PATH_MAX];
  static int next;
  char* out = bufs[next++ % 8];
  char rel[PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rel, sizeof rel, fmt, ap);
  va_end(ap);
  if (snprintf(out, PATH_MAX, "%s/%s", dir, rel) >= PATH_MAX) out[0] = 0;
  return out;
}

// Whether DIR/rel exists.
static inline int exists_at(const char* rel) {
  struct stat st;
  return stat(at("%s", rel), &st) == 0;
}

// Makes the empty file DIR/rel: 0, or -1 with errno set.
static inline int touch_at(const char* rel) {
  int fd = open(at("%s", rel), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}
