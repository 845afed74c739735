// Runs a command as if on a host kernel without Landlock (and, with
// --no-userns, without unprivileged user namespaces): a seccomp filter
// makes landlock_create_ruleset fail with ENOSYS, as a kernel built without
// it does, and unshare/clone asking for a new user namespace fail with
// EPERM, as a kernel that forbids them does.
//
//   old_kernel [--no-userns] PROG [ARGS...]
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define ARG0_LO BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))

int main(int argc, char** argv) {
  int no_userns = argc > 1 && !strcmp(argv[1], "--no-userns");
  char** cmd = argv + 1 + no_userns;
  if (!*cmd) {
    fprintf(stderr, "usage: old_kernel [--no-userns] PROG [ARGS...]\n");
    return 2;
  }
  struct sock_filter f[] = {
      LOAD(arch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      LOAD(nr),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      ARG0_LO,
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, no_userns ? CLONE_NEWUSER : 0, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    perror("old_kernel: seccomp");
    return 2;
  }
  execvp(cmd[0], cmd);
  perror(cmd[0]);
  return 127;
}
