// Capabilities (capabilities(7)): capget/capset and their rules, the
// bounding and ambient sets and securebits (prctl), what changing the user
// ids does to the sets, the permission checks going through the effective
// set, and execve's transition (root's programs, set-user-ID and
// set-group-ID files, file capabilities, no_new_privs, nosuid mounts), as
// /proc/PID/status and the auxiliary vector tell it; the extended
// attributes of tmpfs that hold file capabilities. Run as root in a
// scratch folder, on a tmpfs of its own.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

#ifndef SECBIT_KEEP_CAPS
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_KEEP_CAPS (1 << 4)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#endif

#define BIT(c) (1ull << (c))
#define USER 1000
#define FS_CAPS (BIT(CAP_CHOWN) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH) | BIT(CAP_FOWNER) | BIT(CAP_FSETID))

struct caps {
  uint64_t eff, prm, inh;
};

static long capget_raw(int version, pid_t pid, struct __user_cap_data_struct* data, int* version_out) {
  struct __user_cap_header_struct h = {(uint32_t)version, pid};
  long r = syscall(SYS_capget, &h, data);
  if (version_out) *version_out = (int)h.version;
  return r;
}

static struct caps get_caps(pid_t pid) {
  struct __user_cap_data_struct d[2] = {{0}};
  REQUIRE(capget_raw(_LINUX_CAPABILITY_VERSION_3, pid, d, NULL) == 0, "capget: %s", strerror(errno));
  struct caps c = {d[0].effective | (uint64_t)d[1].effective << 32, d[0].permitted | (uint64_t)d[1].permitted << 32,
                   d[0].inheritable | (uint64_t)d[1].inheritable << 32};
  return c;
}

static long set_caps(struct caps c) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {
      {(uint32_t)c.eff, (uint32_t)c.prm, (uint32_t)c.inh},
      {(uint32_t)(c.eff >> 32), (uint32_t)(c.prm >> 32), (uint32_t)(c.inh >> 32)}};
  return syscall(SYS_capset, &h, d);
}

// Drops `bits` from the effective set only.
static void drop_effective(uint64_t bits) {
  struct caps c = get_caps(0);
  c.eff &= ~bits;
  REQUIRE(set_caps(c) == 0, "capset: %s", strerror(errno));
}

// One hex line of /proc/self/status ("CapEff:" ...); ~0 when missing.
static uint64_t status_field(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return ~0ull;
  char line[256];
  uint64_t v = ~0ull;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n) && line[n] == ':') v = strtoull(line + n + 1, NULL, 16);
  fclose(f);
  return v;
}

// Forks; the child runs fn and exits with its failure count.
static void in_child(const char* what, void (*fn)(const char*), const char* dir) {
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    fn(dir);
    fflush(stdout);
    _exit(guest_failures ? 1 : 0);
  }
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the child reports failures (status %#x)", what, st);
}

// What a re-executed copy of this program reports of itself.
struct report {
  unsigned ruid, euid, suid, rgid, egid, sgid;
  unsigned long long inh, prm, eff, bnd, amb;
  int nnp, secure, keepcaps, capget_agrees;
};

static int report_main(void) {
  unsigned r[6];
  getresuid(&r[0], &r[1], &r[2]);
  getresgid(&r[3], &r[4], &r[5]);
  struct caps c = get_caps(0);
  unsigned long long eff = status_field("CapEff"), prm = status_field("CapPrm"), inh = status_field("CapInh");
  printf("%u %u %u %u %u %u %llx %llx %llx %llx %llx %d %lu %d %d\n", r[0], r[1], r[2], r[3], r[4], r[5], inh, prm,
         eff, (unsigned long long)status_field("CapBnd"), (unsigned long long)status_field("CapAmb"),
         (int)status_field("NoNewPrivs"), getauxval(AT_SECURE), prctl(PR_GET_KEEPCAPS),
         c.eff == eff && c.prm == prm && c.inh == inh);
  return 0;
}

// Runs `prog --report` after `setup` in a child; its report into *out.
static int exec_report(const char* prog, void (*setup)(void), struct report* out) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    if (setup) setup();
    dup2(p[1], 1);
    execl(prog, prog, "--report", (char*)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[512] = "";
  ssize_t n = 0, got;
  while ((got = read(p[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += got;
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  memset(out, 0, sizeof *out);
  int k = sscanf(buf, "%u %u %u %u %u %u %llx %llx %llx %llx %llx %d %d %d %d", &out->ruid, &out->euid, &out->suid,
                 &out->rgid, &out->egid, &out->sgid, &out->inh, &out->prm, &out->eff, &out->bnd, &out->amb, &out->nnp,
                 &out->secure, &out->keepcaps, &out->capget_agrees);
  CHECK(k == 15 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s --report: status %#x, %d fields of '%s'", prog, st, k,
        buf);
  CHECK(out->capget_agrees, "capget and /proc/self/status agree after exec");
  return k == 15;
}

static void test_capget(void) {
  struct caps c = get_caps(0);
  CHECK(c.eff == c.prm && c.inh == 0, "root holds its permitted set: eff %llx prm %llx inh %llx",
        (unsigned long long)c.eff, (unsigned long long)c.prm, (unsigned long long)c.inh);
  CHECK(c.eff & BIT(CAP_CHOWN), "root holds CAP_CHOWN");
  CHECK(status_field("CapEff") == c.eff && status_field("CapPrm") == c.prm && status_field("CapInh") == c.inh,
        "/proc/self/status says what capget says");
  CHECK(status_field("CapAmb") == 0, "no ambient capabilities");
  CHECK((status_field("CapBnd") & c.prm) == c.prm, "the bounding set holds the permitted set");
  struct __user_cap_data_struct d[2];
  int version = 0;
  errno = 0;
  CHECK(capget_raw(0x12345, 0, d, &version) == -1 && errno == EINVAL, "a bad version: EINVAL");
  CHECK(version == _LINUX_CAPABILITY_VERSION_3, "the preferred version is written back: %#x", version);
  CHECK(capget_raw(0x12345, 0, NULL, NULL) == 0, "a version probe without data: 0");
  CHECK(capget_raw(_LINUX_CAPABILITY_VERSION_1, 0, d, NULL) == 0 && d[0].effective == (uint32_t)c.eff,
        "version 1: the low word");
  errno = 0;
  CHECK(capget_raw(_LINUX_CAPABILITY_VERSION_3, 0x3ffffff0, d, NULL) == -1 && errno == ESRCH, "no such pid: ESRCH");
  errno = 0;
  CHECK(capget_raw(_LINUX_CAPABILITY_VERSION_3, -5, d, NULL) == -1 && errno == EINVAL, "negative pid: EINVAL");
}

static void capset_rules(const char* dir) {
  struct caps c = get_caps(0);
  struct caps t = c;
  t.eff &= ~BIT(CAP_CHOWN);
  CHECK_OK(set_caps(t));
  struct caps now = get_caps(0);
  CHECK(!(now.eff & BIT(CAP_CHOWN)) && (now.prm & BIT(CAP_CHOWN)), "CAP_CHOWN left effective, kept permitted");
  char file[PATH_MAX];
  snprintf(file, sizeof file, "%s/owned", dir);
  int fd = open(file, O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  CHECK_ERR(chown(file, 1234, -1), EPERM);
  t.eff |= BIT(CAP_CHOWN);
  CHECK_OK(set_caps(t));
  CHECK_OK(chown(file, 1234, -1));
  // Permitted shrinks for good.
  t.prm &= ~BIT(CAP_NET_RAW);
  t.eff &= ~BIT(CAP_NET_RAW);
  CHECK_OK(set_caps(t));
  struct caps back = t;
  back.prm |= BIT(CAP_NET_RAW);
  CHECK_ERR(set_caps(back), EPERM);
  back = t;
  back.eff |= BIT(CAP_NET_RAW);
  CHECK_ERR(set_caps(back), EPERM);  // effective beyond permitted
  // Without CAP_SETPCAP only what is permitted may become inheritable.
  t.eff &= ~BIT(CAP_SETPCAP);
  CHECK_OK(set_caps(t));
  back = t;
  back.inh = BIT(CAP_NET_RAW);
  CHECK_ERR(set_caps(back), EPERM);
  back.inh = BIT(CAP_KILL);
  CHECK_OK(set_caps(back));
  CHECK(get_caps(0).inh == BIT(CAP_KILL), "inheritable set");
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, getppid()};
  struct __user_cap_data_struct d[2] = {{0}};
  CHECK_ERR(syscall(SYS_capset, &h, d), EPERM);  // another process's
}

static void bounding_set(const char* prog) {
  CHECK(prctl(PR_CAPBSET_READ, CAP_NET_RAW) == 1, "CAP_NET_RAW in the bounding set");
  CHECK_ERR(prctl(PR_CAPBSET_DROP, CAP_LAST_CAP + 30), EINVAL);
  CHECK_OK(prctl(PR_CAPBSET_DROP, CAP_NET_RAW));
  CHECK(prctl(PR_CAPBSET_READ, CAP_NET_RAW) == 0, "dropped from the bounding set");
  CHECK(get_caps(0).prm & BIT(CAP_NET_RAW), "the permitted set keeps it until exec");
  CHECK(!(status_field("CapBnd") & BIT(CAP_NET_RAW)), "CapBnd without it");
  struct report r;
  if (exec_report(prog, NULL, &r)) {
    CHECK(r.prm == r.bnd && r.eff == r.bnd, "root's program holds the bounding set: prm %llx eff %llx bnd %llx",
          r.prm, r.eff, r.bnd);
    CHECK(!(r.prm & BIT(CAP_NET_RAW)) && r.secure == 0, "without CAP_NET_RAW, not a secure exec");
  }
  drop_effective(BIT(CAP_SETPCAP));
  CHECK_ERR(prctl(PR_CAPBSET_DROP, CAP_KILL), EPERM);
}

static void ambient_set(const char* prog) {
  CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0) == 0, "not ambient at first");
  CHECK_ERR(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0), EPERM);  // not inheritable
  CHECK_ERR(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_LAST_CAP + 30, 0, 0), EINVAL);
  CHECK_ERR(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_KILL, 1, 0), EINVAL);
  CHECK_ERR(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0), EINVAL);
  CHECK_ERR(prctl(PR_CAP_AMBIENT, 99, CAP_KILL, 0, 0), EINVAL);
  // The way a service manager starts a daemon as a user with one right.
  CHECK_OK(prctl(PR_SET_KEEPCAPS, 1));
  CHECK_OK(setresgid(USER, USER, USER));
  CHECK_OK(setresuid(USER, USER, USER));
  struct caps c = get_caps(0);
  CHECK(c.eff == 0 && c.prm != 0, "keepcaps: permitted kept, effective cleared (eff %llx)", (unsigned long long)c.eff);
  c.eff = c.prm;
  c.inh = BIT(CAP_NET_BIND_SERVICE);
  CHECK_OK(set_caps(c));
  CHECK_OK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
  CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0) == 1, "ambient now");
  struct report r;
  if (exec_report(prog, NULL, &r)) {
    CHECK(r.euid == USER && r.amb == BIT(CAP_NET_BIND_SERVICE) && r.prm == r.amb && r.eff == r.amb,
          "the user's program holds only the ambient right: prm %llx eff %llx amb %llx", r.prm, r.eff, r.amb);
    CHECK(r.secure == 0 && r.keepcaps == 0, "not secure (%d); keepcaps cleared by exec (%d)", r.secure, r.keepcaps);
  }
  // Lowering the permitted set takes the ambient one with it.
  c.prm &= ~BIT(CAP_NET_BIND_SERVICE);
  c.eff = c.prm;
  CHECK_OK(set_caps(c));
  CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0) == 0, "ambient follows permitted");
}

static void leaving_root(const char* dir) {
  CHECK_OK(setresuid(USER, USER, USER));
  struct caps c = get_caps(0);
  CHECK(c.eff == 0 && c.prm == 0, "an ordinary user holds nothing: eff %llx prm %llx", (unsigned long long)c.eff,
        (unsigned long long)c.prm);
  CHECK_ERR(setuid(0), EPERM);
  CHECK(prctl(PR_CAPBSET_READ, CAP_CHOWN) == 1, "the bounding set stays");
}

static void effective_uid_only(const char* dir) {
  struct caps before = get_caps(0);
  CHECK_OK(seteuid(USER));
  struct caps c = get_caps(0);
  CHECK(c.eff == 0 && c.prm == before.prm, "euid not 0: effective cleared, permitted kept");
  CHECK_OK(seteuid(0));
  c = get_caps(0);
  CHECK(c.eff == c.prm, "euid 0 again: effective = permitted");
  // fsuid moves only the filesystem rights.
  CHECK(setfsuid(USER) == 0, "setfsuid returns the old fsuid");
  c = get_caps(0);
  CHECK(!(c.eff & FS_CAPS) && (c.eff & BIT(CAP_KILL)) && (c.eff & BIT(CAP_SETUID)),
        "fsuid not 0: the filesystem rights leave effective (eff %llx)", (unsigned long long)c.eff);
  setfsuid(0);
  CHECK((get_caps(0).eff & FS_CAPS) == FS_CAPS, "fsuid 0 again: they return");
  // SECBIT_NO_SETUID_FIXUP: the sets stay as they are.
  CHECK_OK(prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP));
  CHECK_OK(seteuid(USER));
  CHECK(get_caps(0).eff == before.eff, "no fix-up asked: effective kept");
  CHECK_OK(seteuid(0));
}

static void securebits(const char* dir) {
  CHECK(prctl(PR_GET_SECUREBITS) == 0 && prctl(PR_GET_KEEPCAPS) == 0, "clear at first");
  CHECK_OK(prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS));
  CHECK(prctl(PR_GET_KEEPCAPS) == 1 && prctl(PR_GET_SECUREBITS) == SECBIT_KEEP_CAPS, "keepcaps through securebits");
  CHECK_ERR(prctl(PR_SET_KEEPCAPS, 2), EINVAL);
  CHECK_ERR(prctl(PR_SET_SECUREBITS, 1 << 20), EPERM);  // no such bit
  CHECK_OK(prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED));
  CHECK_ERR(prctl(PR_SET_KEEPCAPS, 0), EPERM);
  CHECK_ERR(prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS), EPERM);  // a lock stays
  drop_effective(BIT(CAP_SETPCAP));
  CHECK_ERR(prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP), EPERM);
}

// Root's powers are its capabilities: without them, root is refused.
static void checks_use_caps(const char* dir) {
  char file[PATH_MAX], node[PATH_MAX];
  snprintf(file, sizeof file, "%s/theirs", dir);
  snprintf(node, sizeof node, "%s/node", dir);
  int fd = open(file, O_CREAT | O_WRONLY, 0600);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(chown(file, 1234, 1234) == 0);
  drop_effective(BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH));
  CHECK_ERR(open(file, O_RDONLY), EACCES);
  struct caps c = get_caps(0);
  c.eff |= BIT(CAP_DAC_READ_SEARCH);
  CHECK_OK(set_caps(c));
  fd = open(file, O_RDONLY);
  CHECK(fd >= 0, "CAP_DAC_READ_SEARCH reads: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_ERR(open(file, O_WRONLY), EACCES);
  c.eff |= BIT(CAP_DAC_OVERRIDE);
  CHECK_OK(set_caps(c));
  fd = open(file, O_WRONLY);
  CHECK(fd >= 0, "CAP_DAC_OVERRIDE writes: %s", strerror(errno));
  if (fd >= 0) close(fd);
  drop_effective(BIT(CAP_FOWNER));
  CHECK_ERR(chmod(file, 0644), EPERM);
  drop_effective(BIT(CAP_MKNOD));
  CHECK_ERR(mknod(node, S_IFCHR | 0600, makedev(1, 3)), EPERM);
  drop_effective(BIT(CAP_SYS_CHROOT));
  CHECK_ERR(chroot("/"), EPERM);
  drop_effective(BIT(CAP_SYS_ADMIN));
  CHECK_ERR(sethostname("x", 1), EPERM);
  CHECK_ERR(mount("none", dir, "tmpfs", 0, NULL), EPERM);
  drop_effective(BIT(CAP_SETUID));
  CHECK_ERR(setuid(USER), EPERM);
  // Raw IP sockets need CAP_NET_RAW; raw netlink sockets do not.
  drop_effective(BIT(CAP_NET_RAW));
  CHECK_ERR(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
  int nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  CHECK(nl >= 0, "a raw netlink socket without CAP_NET_RAW: %s", strerror(errno));
  if (nl >= 0) close(nl);
}

static void become_user(void) {
  if (setresgid(USER, USER, USER) || setresuid(USER, USER, USER)) _exit(126);
}
static void become_user_nnp(void) {
  become_user();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) _exit(126);
}
static void effective_user(void) {
  if (seteuid(USER)) _exit(126);
}

// A copy of this program in `dir`, owned by root.
static void copy_self(const char* path) {
  int in = open("/proc/self/exe", O_RDONLY), out = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0755);
  REQUIRE(in >= 0 && out >= 0);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) REQUIRE(write(out, buf, (size_t)n) == n);
  close(in);
  close(out);
}

static void test_exec(const char* dir) {
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/prog", dir);
  copy_self(prog);
  struct report r;
  if (exec_report(prog, become_user, &r))
    CHECK(r.euid == USER && r.eff == 0 && r.prm == 0 && r.secure == 0, "an ordinary user's program: nothing");
  if (exec_report(prog, effective_user, &r))
    CHECK(r.ruid == 0 && r.euid == USER && r.eff == 0 && r.prm == r.bnd && r.secure == 1,
          "real root, effective user: permitted, not effective, secure (prm %llx eff %llx secure %d)", r.prm, r.eff,
          r.secure);
  REQUIRE(chmod(prog, 04755) == 0);
  if (exec_report(prog, become_user, &r)) {
    CHECK(r.ruid == USER && r.euid == 0 && r.suid == 0, "set-user-ID root: euid 0 (%u %u %u)", r.ruid, r.euid, r.suid);
    CHECK(r.eff == r.bnd && r.prm == r.bnd && r.secure == 1, "with root's capabilities, secure (eff %llx secure %d)",
          r.eff, r.secure);
  }
  if (exec_report(prog, become_user_nnp, &r))
    CHECK(r.euid == USER && r.eff == 0 && r.nnp == 1 && r.secure == 0, "no_new_privs: the bit is ignored (euid %u)",
          r.euid);
  REQUIRE(chown(prog, 0, 4321) == 0 && chmod(prog, 02755) == 0);
  if (exec_report(prog, become_user, &r))
    CHECK(r.egid == 4321 && r.sgid == 4321 && r.rgid == USER && r.euid == USER && r.secure == 1,
          "set-group-ID: egid %u", r.egid);
  REQUIRE(chmod(prog, 04755) == 0);
  REQUIRE(mount(NULL, dir, NULL, MS_REMOUNT | MS_NOSUID, NULL) == 0, "remount nosuid: %s", strerror(errno));
  if (exec_report(prog, become_user, &r)) CHECK(r.euid == USER && r.secure == 0, "nosuid: euid %u", r.euid);
  REQUIRE(mount(NULL, dir, NULL, MS_REMOUNT, NULL) == 0, "remount: %s", strerror(errno));
}

// A security.capability value (struct vfs_cap_data, revision 2).
static int set_file_caps(const char* path, uint64_t permitted, int effective) {
  uint32_t v[5] = {VFS_CAP_REVISION_2 | (effective ? VFS_CAP_FLAGS_EFFECTIVE : 0), (uint32_t)permitted, 0,
                   (uint32_t)(permitted >> 32), 0};
  return setxattr(path, "security.capability", v, sizeof v, 0);
}

static const char* fcap_path;
static void user_sets_file_caps(void) {
  become_user();
  _exit(set_file_caps(fcap_path, BIT(CAP_KILL), 1) == -1 && errno == EPERM ? 0 : 3);
}

static void test_file_caps(const char* dir) {
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/fcap", dir);
  copy_self(prog);
  CHECK_OK(set_file_caps(prog, BIT(CAP_NET_BIND_SERVICE), 1));
  uint32_t v[6] = {0};
  CHECK(getxattr(prog, "security.capability", v, sizeof v) == 20 && v[0] == (VFS_CAP_REVISION_2 | 1) &&
            v[1] == BIT(CAP_NET_BIND_SERVICE),
        "the value reads back");
  CHECK_ERR(setxattr(prog, "security.capability", v, 7, 0), EINVAL);
  CHECK_ERR(setxattr(prog, "security.capability", v, 12, 0), EINVAL);  // revision 1 is not stored
  struct report r;
  if (exec_report(prog, become_user, &r))
    CHECK(r.euid == USER && r.prm == BIT(CAP_NET_BIND_SERVICE) && r.eff == r.prm && r.secure == 1,
          "a user's program with file capabilities: prm %llx eff %llx secure %d", r.prm, r.eff, r.secure);
  if (exec_report(prog, become_user_nnp, &r))
    CHECK(r.prm == 0 && r.eff == 0, "no_new_privs: none granted (prm %llx)", r.prm);
  CHECK_OK(set_file_caps(prog, BIT(CAP_NET_BIND_SERVICE), 0));
  if (exec_report(prog, become_user, &r))
    CHECK(r.prm == BIT(CAP_NET_BIND_SERVICE) && r.eff == 0 && r.secure == 1,
          "not marked effective: permitted only (prm %llx eff %llx)", r.prm, r.eff);
  fcap_path = prog;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) user_sets_file_caps();
  int st;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a user may not set file capabilities (%#x)", st);
  // A write or a new owner drops them.
  int fd = open(prog, O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  CHECK(write(fd, "", 1) == 1);
  close(fd);
  CHECK_ERR(getxattr(prog, "security.capability", v, sizeof v), ENODATA);
  CHECK_OK(set_file_caps(prog, BIT(CAP_NET_BIND_SERVICE), 1));
  CHECK_OK(chown(prog, 0, 0));
  CHECK_ERR(getxattr(prog, "security.capability", v, sizeof v), ENODATA);
  // Other namespaces on the tmpfs: user and trusted, listed.
  CHECK_OK(setxattr(prog, "user.note", "hi", 2, XATTR_CREATE));
  CHECK_ERR(setxattr(prog, "user.note", "hi", 2, XATTR_CREATE), EEXIST);
  CHECK_ERR(setxattr(prog, "user.other", "hi", 2, XATTR_REPLACE), ENODATA);
  CHECK_OK(setxattr(prog, "trusted.mark", "t", 1, 0));
  char names[256];
  ssize_t n = listxattr(prog, names, sizeof names);
  int seen = 0;
  for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
    seen |= (!strcmp(names + i, "user.note") ? 1 : 0) | (!strcmp(names + i, "trusted.mark") ? 2 : 0);
  CHECK(seen == 3, "listxattr names both (%zd bytes)", n);
  CHECK_ERR(listxattr(prog, names, 3), ERANGE);
  CHECK(getxattr(prog, "user.note", NULL, 0) == 2, "size probe");
  CHECK_ERR(getxattr(prog, "user.note", names, 1), ERANGE);
  CHECK_OK(removexattr(prog, "user.note"));
  CHECK_ERR(removexattr(prog, "user.note"), ENODATA);
}

int main(int argc, char** argv) {
  guest_name = "caps";
  if (argc == 2 && !strcmp(argv[1], "--report")) return report_main();
  REQUIRE(argc == 2, "usage: caps SCRATCH_DIR");
  if (geteuid() != 0) {
    puts("not root (skipped)");
    return 77;
  }
  char dir[PATH_MAX];
  guest_mount_scratch(argv[1], dir, "size=16m");
  // The re-executed copy lives on the tmpfs, where any user may run it.
  static char self[PATH_MAX + 8];
  snprintf(self, sizeof self, "%s/self", dir);
  copy_self(self);
  test_capget();
  in_child("capset", capset_rules, dir);
  in_child("bounding set", bounding_set, self);
  in_child("ambient set", ambient_set, self);
  in_child("leaving root", leaving_root, dir);
  in_child("effective uid", effective_uid_only, dir);
  in_child("securebits", securebits, dir);
  in_child("checks", checks_use_caps, dir);
  in_child("exec", test_exec, dir);
  in_child("file capabilities", test_file_caps, dir);
  umount2(dir, MNT_DETACH);
  return guest_finish();
}
