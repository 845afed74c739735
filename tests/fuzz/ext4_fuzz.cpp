// libFuzzer target: the input is a filesystem image. It becomes ubda
// (read-only), is mounted through the kernel's ext4 volume layer and
// walked whole (ext4_walk.h: statfs, readdir, name walks, stat, file
// reads, readlink), then unmounted. Any crash, sanitizer report or hang
// fails. With FLATUX_EXT4_FUZZ_RW=1 in the environment the mount is
// read-write and a few changes follow the walk (libext2fs's write paths on
// damaged images; not in CI, whose run stays on the reading side).
//
// The kernel is built for this binary by clang with
// -fsanitize=fuzzer-no-link,address,undefined, so libFuzzer sees coverage
// from our code. libext2fs is the system's static library, uninstrumented:
// its own branches give no coverage and its reads are not checked, but
// its heap comes from the (ASan-intercepted) libc malloc and every call
// into it passes through our instrumented gate. The kernel runs outside
// any guest here, so FS is the host thread's own TLS, which ASan's
// runtime needs and the foreign-code gate borrows.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

#include "ext4_walk.h"

using namespace flatux;

namespace {

Kernel* kernel;
bool read_write;
int image_fd = -1;
char image_path[64];

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kernel = fuzz::make_kernel(true);  // damaged images log a line each
  const char* rw = getenv("FLATUX_EXT4_FUZZ_RW");
  read_write = rw && *rw == '1';
  image_fd = memfd_create("ext4-fuzz-image", 0);
  if (!kernel || image_fd < 0) {
    fprintf(stderr, "ext4_fuzz: no kernel or no memfd\n");
    abort();
  }
  snprintf(image_path, sizeof image_path, "/proc/self/fd/%d", image_fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (ftruncate(image_fd, 0) != 0 || pwrite(image_fd, data, size, 0) != (ssize_t)size) abort();
  if (ubd_attach(*kernel, 0, image_path, !read_write) != 0) return 0;
  fuzz::Ext4Walker w;
  if (ext4::Volume::mount(*kernel, *ubd_by_index(*kernel, 0), !read_write, &w.vol) == 0) {
    w.walk_all();
    if (read_write) w.change();
    w.vol->unmount();
  }
  ubd_detach_all(*kernel);
  return 0;
}
