// inotify: the events of names made, removed and moved, attributes, data,
// opens and closes, in Linux's order, on watches on a folder and on files
// in it; watch flags (ONESHOT, MASK_ADD, MASK_CREATE, ONLYDIR,
// DONT_FOLLOW), rm_watch's IN_IGNORED, reads (too short, several events,
// non-blocking, blocking until another process acts), FIONREAD, poll and
// epoll, merged events, and the errors.
//
// usage: inotify DIR (a fresh folder)
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE 0x10000000
#endif

// The events waiting on fd, as "wd:MASK:name" words in one line.
static const char* drain(int fd) {
  static char out[4096];
  char buf[8192] __attribute__((aligned(8)));
  size_t used = 0;
  out[0] = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      struct inotify_event* e = (struct inotify_event*)p;
      used += (size_t)snprintf(out + used, sizeof out - used, "%s%d:%x:%s", used ? " " : "", e->wd, e->mask,
                               e->len ? e->name : "");
      if (used >= sizeof out) return out;
      p += sizeof *e + e->len;
    }
  }
  return out;
}

#define EXPECT_EVENTS(fd, want)                                                     \
  do {                                                                              \
    const char* got_ = drain(fd);                                                   \
    CHECK(strcmp(got_, want) == 0, "events: got \"%s\", want \"%s\"", got_, want); \
  } while (0)

static void put(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0, "%s: %s", path, strerror(errno));
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

static void test_events(void) {
  printf("the events of each change, folder and file watched:\n");
  REQUIRE(mkdir("d", 0755) == 0 && mkdir("d/sub", 0755) == 0);
  put("d/f", "x");
  REQUIRE(link("d/f", "d/f2") == 0);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(fd >= 0, "inotify_init1: %s", strerror(errno));
  int wd = inotify_add_watch(fd, "d", IN_ALL_EVENTS);
  int wf = inotify_add_watch(fd, "d/f", IN_ALL_EVENTS);
  int ws = inotify_add_watch(fd, "d/sub", IN_ALL_EVENTS);
  CHECK(wd == 1 && wf == 2 && ws == 3, "wds %d %d %d", wd, wf, ws);
  CHECK(unlink("d/f2") == 0);
  EXPECT_EVENTS(fd, "2:4: 1:200:f2");
  int o = open("d/f", O_WRONLY);
  CHECK(write(o, "y", 1) == 1);
  close(o);
  EXPECT_EVENTS(fd, "1:20:f 2:20: 1:2:f 2:2: 1:8:f 2:8:");
  char c;
  o = open("d/f", O_RDONLY);
  CHECK(read(o, &c, 1) == 1);
  close(o);
  EXPECT_EVENTS(fd, "1:20:f 2:20: 1:1:f 2:1: 1:10:f 2:10:");
  CHECK(chmod("d/f", 0600) == 0);
  EXPECT_EVENTS(fd, "1:4:f 2:4:");
  CHECK(rename("d/f", "d/g") == 0);
  EXPECT_EVENTS(fd, "1:40:f 1:80:g 2:800:");
  // The watch followed the file to its new name.
  CHECK(truncate("d/g", 0) == 0);
  EXPECT_EVENTS(fd, "1:2:g 2:2:");
  CHECK(unlink("d/g") == 0);
  EXPECT_EVENTS(fd, "2:4: 2:400: 2:8000: 1:200:g");
  CHECK(rmdir("d/sub") == 0);
  EXPECT_EVENTS(fd, "3:400: 3:8000: 1:40000200:sub");
  CHECK(mkdir("d/n", 0755) == 0);
  EXPECT_EVENTS(fd, "1:40000100:n");
  o = open("d/new", O_CREAT | O_WRONLY, 0644);
  close(o);
  EXPECT_EVENTS(fd, "1:100:new 1:20:new 1:8:new");
  CHECK(symlink("new", "d/link") == 0);
  EXPECT_EVENTS(fd, "1:100:link");
  o = open("d", O_RDONLY | O_DIRECTORY);
  close(o);
  EXPECT_EVENTS(fd, "1:40000020: 1:40000010:");
  // A rename that replaces: the replaced file's watch ends.
  put("d/a", "a");
  put("d/b", "b");
  drain(fd);
  int wb = inotify_add_watch(fd, "d/b", IN_ALL_EVENTS);
  CHECK(rename("d/a", "d/b") == 0);
  char want[128];
  snprintf(want, sizeof want, "1:40:a 1:80:b %d:4: %d:400: %d:8000:", wb, wb, wb);
  EXPECT_EVENTS(fd, want);
  close(fd);
}

static void test_flags(void) {
  printf("watch flags, rm_watch and errors:\n");
  put("flags-file", "x");
  REQUIRE(mkdir("flags-dir", 0755) == 0);
  REQUIRE(symlink("flags-file", "flags-link") == 0);
  int fd = inotify_init1(IN_NONBLOCK);
  REQUIRE(fd >= 0);
  int w = inotify_add_watch(fd, "flags-file", IN_ATTRIB | IN_ONESHOT);
  CHECK(w > 0);
  CHECK(chmod("flags-file", 0600) == 0 && chmod("flags-file", 0644) == 0);
  char want[64];
  snprintf(want, sizeof want, "%d:4: %d:8000:", w, w);
  EXPECT_EVENTS(fd, want);  // one event, then the watch ends
  w = inotify_add_watch(fd, "flags-file", IN_ATTRIB);
  CHECK(inotify_add_watch(fd, "flags-file", IN_MODIFY | IN_MASK_ADD) == w);
  CHECK(inotify_add_watch(fd, "flags-file", IN_MODIFY | IN_MASK_CREATE) == -1 && errno == EEXIST);
  CHECK(truncate("flags-file", 0) == 0 && chmod("flags-file", 0600) == 0);
  snprintf(want, sizeof want, "%d:2: %d:4:", w, w);
  EXPECT_EVENTS(fd, want);
  CHECK(inotify_add_watch(fd, "flags-file", IN_MODIFY) == w);  // replaces the mask
  CHECK(chmod("flags-file", 0644) == 0);
  EXPECT_EVENTS(fd, "");
  CHECK(inotify_rm_watch(fd, w) == 0);
  snprintf(want, sizeof want, "%d:8000:", w);
  EXPECT_EVENTS(fd, want);
  CHECK_ERR(inotify_rm_watch(fd, w), EINVAL);
  CHECK_ERR(inotify_add_watch(fd, "flags-file", IN_ATTRIB | IN_ONLYDIR), ENOTDIR);
  CHECK(inotify_add_watch(fd, "flags-dir", IN_ATTRIB | IN_ONLYDIR) > 0);
  // DONT_FOLLOW watches the link itself.
  int wl = inotify_add_watch(fd, "flags-link", IN_ATTRIB | IN_DONT_FOLLOW);
  int wt = inotify_add_watch(fd, "flags-link", IN_ATTRIB);
  CHECK(wl > 0 && wt > 0 && wl != wt, "%d %d", wl, wt);
  CHECK_ERR(inotify_add_watch(fd, "no-such-file", IN_ATTRIB), ENOENT);
  CHECK_ERR(inotify_add_watch(fd, "flags-file", 0), EINVAL);
  CHECK_ERR(inotify_add_watch(fd, "flags-file", IN_CREATE | 0x00001000), EINVAL);  // not an inotify bit
  // IN_ISDIR is taken (and means nothing here), as libmount's monitor asks.
  int wd_isdir = inotify_add_watch(fd, ".", IN_CREATE | IN_ISDIR);
  CHECK(wd_isdir >= 0, "IN_CREATE|IN_ISDIR: %s", strerror(errno));
  if (wd_isdir >= 0) inotify_rm_watch(fd, wd_isdir);
  CHECK_ERR(inotify_add_watch(fd, "flags-file", IN_ATTRIB | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
  CHECK_ERR(inotify_add_watch(0, "flags-file", IN_ATTRIB), EINVAL);
  CHECK_ERR(inotify_add_watch(999, "flags-file", IN_ATTRIB), EBADF);
  CHECK_ERR(inotify_init1(01), EINVAL);
  close(fd);
}

static void test_reads(void) {
  printf("reads: too short, merged events, FIONREAD, poll and epoll, non-blocking:\n");
  put("reads-file", "x");
  int fd = inotify_init1(IN_NONBLOCK);
  REQUIRE(fd >= 0);
  int w = inotify_add_watch(fd, ".", IN_MODIFY | IN_ATTRIB);
  char buf[256] __attribute__((aligned(8)));
  CHECK_ERR(read(fd, buf, sizeof buf), EAGAIN);
  struct pollfd p = {fd, POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
  CHECK(epoll_wait(ep, &ev, 1, 0) == 0);
  int o = open("reads-file", O_WRONLY);
  for (int i = 0; i < 5; i++) CHECK(write(o, "z", 1) == 1);  // merged into one
  close(o);
  CHECK(chmod("reads-file", 0600) == 0);
  CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLIN));
  CHECK(epoll_wait(ep, &ev, 1, 0) == 1 && ev.data.u32 == 7);
  int avail = -1;
  size_t one = sizeof(struct inotify_event) + 16;  // "reads-file" padded to 16
  CHECK(ioctl(fd, FIONREAD, &avail) == 0 && avail == (int)(2 * one), "FIONREAD %d", avail);
  CHECK_ERR(read(fd, buf, sizeof(struct inotify_event)), EINVAL);
  CHECK(read(fd, buf, one + 4) == (ssize_t)one);  // whole events only
  struct inotify_event* e = (struct inotify_event*)buf;
  CHECK(e->wd == w && e->mask == IN_MODIFY && e->len == 16 && strcmp(e->name, "reads-file") == 0);
  CHECK(read(fd, buf, sizeof buf) == (ssize_t)one && e->mask == IN_ATTRIB);
  CHECK(poll(&p, 1, 0) == 0);
  close(ep);
  close(fd);
}

static void test_blocking(void) {
  printf("a blocking read wakes when another process acts:\n");
  int fd = inotify_init();
  REQUIRE(fd >= 0);
  CHECK(inotify_add_watch(fd, ".", IN_CREATE) > 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    usleep(100 * 1000);
    put("made-by-child", "c");
    _exit(0);
  }
  char buf[256] __attribute__((aligned(8)));
  ssize_t n = read(fd, buf, sizeof buf);
  struct inotify_event* e = (struct inotify_event*)buf;
  CHECK(n > 0 && e->mask == IN_CREATE && strcmp(e->name, "made-by-child") == 0, "read %zd", n);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  struct stat s;
  CHECK(fstat(fd, &s) == 0);
  close(fd);
}

int main(int argc, char** argv) {
  guest_name = "inotify";
  setvbuf(stdout, NULL, _IONBF, 0);
  REQUIRE(argc == 2 && chdir(argv[1]) == 0, "usage: inotify DIR");
  test_events();
  test_flags();
  test_reads();
  test_blocking();
  return guest_finish();
}
