// Everything here reaches host libc state or host TLS.
#include <cerrno>
#include <cstdio>
#include <cstdlib>

int leak_errno(unsigned long n) {
  void* p = malloc(n);
  printf("%p\n", p);
  free(p);
  return errno;
}
