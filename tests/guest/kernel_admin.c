// System administration calls: syslog(2), reboot(2)'s argument checks,
// sethostname/setdomainname with uname. Natively nothing here may change
// the host: the host's log level, log buffer and power stay untouched
// (only calls that must fail are made), and the names are set inside a
// fresh UTS namespace. Under flatux, whose kernel is the guest's own, the
// calls that change state are checked too.
#include "guest_check.h"

#include <fcntl.h>

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAGIC1 0xfee1deadu
#define MAGIC2 672274793u
#define CMD_CAD_ON 0x89abcdefu
#define CMD_CAD_OFF 0u

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

static long sys_syslog(int type, char* buf, int len) { return syscall(SYS_syslog, type, buf, len); }

// own_log: the kernel's log is flatux's and /dev/kmsg is its own, which
// holds when flatux booted the program as init (`flatux run` with the host
// root shares the host's /dev).
static void test_syslog(int own_log) {
  long size = sys_syslog(10 /*SIZE_BUFFER*/, NULL, 0);
  CHECK(size > 0, "SIZE_BUFFER gave %ld", size);
  CHECK_ERR(sys_syslog(3 /*READ_ALL*/, NULL, 10), EINVAL);
  CHECK_ERR(sys_syslog(3, (char*)1, -1), EINVAL);
  CHECK(sys_syslog(3, (char*)1, 0) == 0);
  CHECK_ERR(sys_syslog(8 /*CONSOLE_LEVEL*/, NULL, 0), EINVAL);
  CHECK_ERR(sys_syslog(8, NULL, 9), EINVAL);
  CHECK_ERR(sys_syslog(11, NULL, 0), EINVAL);
  CHECK_ERR(sys_syslog(-1, NULL, 0), EINVAL);
  CHECK(sys_syslog(0 /*CLOSE*/, NULL, 0) == 0);
  CHECK(sys_syslog(1 /*OPEN*/, NULL, 0) == 0);
  if (!own_log) return;
  // A message written to /dev/kmsg comes back through READ_ALL, with its
  // "<facility*8+level>" prefix; CLEAR hides it from later READ_ALLs.
  FILE* k = fopen("/dev/kmsg", "w");
  REQUIRE(k != NULL, "open /dev/kmsg: %s", strerror(errno));
  fputs("<5>kernel_admin marker\n", k);
  fclose(k);
  // One writev is one record, as systemd writes its messages in pieces.
  int kfd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  REQUIRE(kfd >= 0, "open /dev/kmsg: %s", strerror(errno));
  struct iovec pieces[] = {{(void*)"<6>", 3}, {(void*)"kernel_admin[1]: ", 17}, {(void*)"one record", 10},
                           {(void*)"\n", 1}};
  CHECK(writev(kfd, pieces, 4) == 31);
  close(kfd);
  static char buf[1 << 17];
  long n = sys_syslog(3, buf, sizeof buf - 1);
  REQUIRE(n > 0, "READ_ALL gave %ld", n);
  buf[n] = 0;
  CHECK(strstr(buf, "<13>") && strstr(buf, "kernel_admin marker\n"), "READ_ALL: %s", buf);
  CHECK(strstr(buf, "<14>") && strstr(buf, "kernel_admin[1]: one record\n"), "writev's pieces: %s", buf);
  long small = sys_syslog(3, buf, 8);
  CHECK(small >= 0 && small <= 8);
  CHECK(sys_syslog(5 /*CLEAR*/, NULL, 0) == 0);
  n = sys_syslog(3, buf, sizeof buf - 1);
  CHECK(n == 0, "READ_ALL after CLEAR gave %ld", n);
  CHECK(sys_syslog(8, NULL, 3) == 0);
  CHECK(sys_syslog(6 /*CONSOLE_OFF*/, NULL, 0) == 0);
  CHECK(sys_syslog(7 /*CONSOLE_ON*/, NULL, 0) == 0);
}

static void test_reboot_errors(void) {
  CHECK_ERR(syscall(SYS_reboot, 0x1234, MAGIC2, CMD_CAD_ON, 0), EINVAL);
  CHECK_ERR(syscall(SYS_reboot, MAGIC1, 0x1234, CMD_CAD_ON, 0), EINVAL);
  CHECK_ERR(syscall(SYS_reboot, MAGIC1, MAGIC2, 0x12345678, 0), EINVAL);
}

static void test_names(int own_kernel) {
  if (!own_kernel && unshare(CLONE_NEWUTS) != 0) {
    printf("no UTS namespace natively (%s): name checks skipped\n", strerror(errno));
    return;
  }
  char long_name[80];
  memset(long_name, 'x', sizeof long_name);
  CHECK_ERR(sethostname(long_name, 65), EINVAL);
  CHECK_ERR(syscall(SYS_sethostname, long_name, (size_t)-1), EINVAL);
  CHECK_ERR(syscall(SYS_sethostname, (char*)8, 4), EFAULT);
  CHECK(sethostname(long_name, 64) == 0);
  CHECK(sethostname("guest-box", 9) == 0);
  CHECK(setdomainname("example.test", 12) == 0);
  struct utsname u;
  CHECK(uname(&u) == 0);
  CHECK(strcmp(u.nodename, "guest-box") == 0, "nodename %s", u.nodename);
  CHECK(strcmp(u.domainname, "example.test") == 0, "domainname %s", u.domainname);
  char got[80] = "";
  CHECK(gethostname(got, sizeof got) == 0 && strcmp(got, "guest-box") == 0);
  FILE* f = fopen("/proc/sys/kernel/hostname", "r");
  REQUIRE(f != NULL);
  CHECK(fgets(got, sizeof got, f) && strcmp(got, "guest-box\n") == 0, "proc says %s", got);
  fclose(f);
  CHECK(sethostname("", 0) == 0);
  CHECK(uname(&u) == 0 && u.nodename[0] == 0);
}

// Powers off when the program is init: its exit would be a kernel panic.
static void power_off(void) {
  fflush(stdout);
  sync();
  syscall(SYS_reboot, MAGIC1, MAGIC2, 0x4321fedcu /*POWER_OFF*/, 0);
  CHECK(0, "reboot(POWER_OFF) returned: %s", strerror(errno));
}

// Last: it gives up root for good.
static void test_unprivileged(void) {
  if (setuid(65534) != 0 && errno == ENOSYS) {  // flatux has no setuid yet
    printf("setuid: ENOSYS, unprivileged checks skipped\n");
    return;
  }
  REQUIRE(getuid() == 65534);
  CHECK_ERR(syscall(SYS_reboot, MAGIC1, MAGIC2, CMD_CAD_OFF, 0), EPERM);
  CHECK_ERR(syscall(SYS_reboot, 0, 0, 0, 0), EPERM);  // EPERM comes before the magic check
  CHECK_ERR(sethostname("x", 1), EPERM);
}

int main(int argc, char** argv) {
  guest_name = "kernel_admin";
  int own = under_flatux();
  int as_init = argc > 1 && strcmp(argv[1], "as-init") == 0;  // flatux booted us as init
  test_syslog(own && as_init);
  test_reboot_errors();
  test_names(own);
  if (as_init) {
    int failures = guest_finish();
    if (failures == 0) power_off();
    return failures;
  }
  test_unprivileged();
  return guest_finish();
}
