// The host identity flatux runs with.
//
// Started by root, flatux enters a user namespace that maps every host uid
// and gid to itself. Files keep their owners (the guest sees the host's
// ids, new host files belong to root, the invoking user) and, inside that
// namespace, the capabilities a file server needs still apply to every
// file (they are checked against the inode's ids, all mapped). Every other
// capability is gone where it matters: mounts, modules, raw sockets,
// tracing or signalling host processes, the clock, devices and the
// network all belong to the host's initial namespaces, over which this
// process holds nothing. The alternative, an unused uid, would make the
// folder the user handed over unwritable (it belongs to root) and new
// files belong to a stranger.
//
// Started by an ordinary user, there is nothing to give up; a folder root
// still gets a namespace (mapping only that user) for its private mounts.
#include "launcher/sandbox/identity.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

bool write_file(const char* path, const char* text, std::string* why) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    *why = std::string(path) + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  return true;
}

std::string id_map(unsigned inner, unsigned outer, unsigned count) {
  char buf[64];
  snprintf(buf, sizeof buf, "%u %u %u\n", inner, outer, count);
  return buf;
}

// Every id this (the parent) namespace maps, each to itself, extent by
// extent: the host's initial namespace maps them all ("0 0 4294967295");
// a rootless engine's namespace only its ranges (0 -> the user, 1.. -> the
// subordinate ids), and an extent may not span two of the parent's.
std::string identity_of(const char* map) {
  FILE* f = fopen(map, "re");
  std::string out;
  unsigned inner, outer, count;
  while (f && fscanf(f, "%u %u %u", &inner, &outer, &count) == 3) out += id_map(inner, inner, count);
  if (f) fclose(f);
  return out.empty() ? id_map(0, 0, 4294967295u) : out;
}

}  // namespace

bool enter_identity_namespace(int extra_flags, std::string* why, const std::string& uid_map,
                              const std::string& gid_map) {
  // Only a process of the parent namespace with CAP_SETUID may write a
  // map of more than its own id: a child does it once we have unshared.
  int go[2], done[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + strerror(errno);
    return false;
  }
  pid_t parent = getpid();
  pid_t helper = fork();
  if (helper < 0) {
    *why = std::string("fork: ") + strerror(errno);
    return false;
  }
  if (helper == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    std::string err;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)parent);
    bool ok = write_file(path, (uid_map.empty() ? identity_of("/proc/self/uid_map") : uid_map).c_str(), &err);
    snprintf(path, sizeof path, "/proc/%d/gid_map", (int)parent);
    ok = ok && write_file(path, (gid_map.empty() ? identity_of("/proc/self/gid_map") : gid_map).c_str(), &err);
    if (!ok) (void)!write(done[1], err.c_str(), err.size());
    _exit(ok ? 0 : 1);
  }
  close(go[0]);
  close(done[1]);
  bool entered = unshare(CLONE_NEWUSER | extra_flags) == 0;
  if (!entered) *why = std::string("unshare: ") + strerror(errno);
  (void)!write(go[1], entered ? "g" : "x", 1);
  close(go[1]);
  char err[256] = "";
  ssize_t n = read(done[0], err, sizeof err - 1);
  close(done[0]);
  int status = 0;
  waitpid(helper, &status, 0);
  if (!entered) return false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // Inside a namespace without a map: nothing of ours is anyone's.
    fprintf(stderr, "flatux: sandbox: mapping ids in the user namespace: %s\n", n > 0 ? err : "failed");
    _exit(125);
  }
  return true;
}

bool enter_own_id_namespace(int extra_flags, std::string* why) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | extra_flags) != 0) {
    *why = std::string("unshare: ") + strerror(errno);
    return false;
  }
  std::string err;
  if (!write_file("/proc/self/setgroups", "deny", &err) ||
      !write_file("/proc/self/uid_map", id_map(uid, uid, 1).c_str(), &err) ||
      !write_file("/proc/self/gid_map", id_map(gid, gid, 1).c_str(), &err)) {
    fprintf(stderr, "flatux: sandbox: mapping ids in the user namespace: %s\n", err.c_str());
    _exit(125);
  }
  return true;
}

bool set_capabilities(uint64_t keep, std::string* why) {
  // The bounding set first (dropping needs CAP_SETPCAP, kept until last).
  for (int cap = 0; cap <= 63; cap++) {
    if (keep & (1ull << cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;  // past the last one
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2]{};
  for (int i = 0; i < 2; i++) {
    d[i].effective = d[i].permitted = (uint32_t)(keep >> (32 * i));
    d[i].inheritable = 0;
  }
  if (syscall(SYS_capset, &h, d) != 0) {
    *why = std::string("capset: ") + strerror(errno);
    return false;
  }
  return true;
}

uint64_t file_server_capabilities() {
  return (1ull << CAP_CHOWN) | (1ull << CAP_DAC_OVERRIDE) | (1ull << CAP_DAC_READ_SEARCH) |
         (1ull << CAP_FOWNER) | (1ull << CAP_FSETID);
}

}  // namespace flatux::launcher
