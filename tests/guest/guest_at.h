// The test's folder and paths inside it, for tests that make their files
// under one folder (`dir`, set by the test before the first at()).
#pragma once
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

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
