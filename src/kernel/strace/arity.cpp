// How many arguments each x86_64 syscall takes (its SYSCALL_DEFINEn), so a
// syscall without a richer description prints exactly its real arguments.
// preadv/pwritev(2) count the ignored high half of the offset, as the kernel
// ABI does.
#include <asm/unistd_64.h>

#include "kernel/strace/internal.h"

namespace flatux::strace {
namespace {

struct ArityRow {
  uint16_t nr;
  uint8_t nargs;
};

constexpr ArityRow kArityRows[] = {
    {__NR_read, 3},                    {__NR_write, 3},                   {__NR_open, 3},
    {__NR_close, 1},                   {__NR_stat, 2},                    {__NR_fstat, 2},
    {__NR_lstat, 2},                   {__NR_poll, 3},                    {__NR_lseek, 3},
    {__NR_mmap, 6},                    {__NR_mprotect, 3},                {__NR_munmap, 2},
    {__NR_brk, 1},                     {__NR_rt_sigaction, 4},            {__NR_rt_sigprocmask, 4},
    {__NR_rt_sigreturn, 0},            {__NR_ioctl, 3},                   {__NR_pread64, 4},
    {__NR_pwrite64, 4},                {__NR_readv, 3},                   {__NR_writev, 3},
    {__NR_access, 2},                  {__NR_pipe, 1},                    {__NR_select, 5},
    {__NR_sched_yield, 0},             {__NR_mremap, 5},                  {__NR_msync, 3},
    {__NR_mincore, 3},                 {__NR_madvise, 3},                 {__NR_shmget, 3},
    {__NR_shmat, 3},                   {__NR_shmctl, 3},                  {__NR_dup, 1},
    {__NR_dup2, 2},                    {__NR_pause, 0},                   {__NR_nanosleep, 2},
    {__NR_getitimer, 2},               {__NR_alarm, 1},                   {__NR_setitimer, 3},
    {__NR_getpid, 0},                  {__NR_sendfile, 4},                {__NR_socket, 3},
    {__NR_connect, 3},                 {__NR_accept, 3},                  {__NR_sendto, 6},
    {__NR_recvfrom, 6},                {__NR_sendmsg, 3},                 {__NR_recvmsg, 3},
    {__NR_shutdown, 2},                {__NR_bind, 3},                    {__NR_listen, 2},
    {__NR_getsockname, 3},             {__NR_getpeername, 3},             {__NR_socketpair, 4},
    {__NR_setsockopt, 5},              {__NR_getsockopt, 5},              {__NR_clone, 5},
    {__NR_fork, 0},                    {__NR_vfork, 0},                   {__NR_execve, 3},
    {__NR_exit, 1},                    {__NR_wait4, 4},                   {__NR_kill, 2},
    {__NR_uname, 1},                   {__NR_semget, 3},                  {__NR_semop, 3},
    {__NR_semctl, 4},                  {__NR_shmdt, 1},                   {__NR_msgget, 2},
    {__NR_msgsnd, 4},                  {__NR_msgrcv, 5},                  {__NR_msgctl, 3},
    {__NR_fcntl, 3},                   {__NR_flock, 2},                   {__NR_fsync, 1},
    {__NR_fdatasync, 1},               {__NR_truncate, 2},                {__NR_ftruncate, 2},
    {__NR_getdents, 3},                {__NR_getcwd, 2},                  {__NR_chdir, 1},
    {__NR_fchdir, 1},                  {__NR_rename, 2},                  {__NR_mkdir, 2},
    {__NR_rmdir, 1},                   {__NR_creat, 2},                   {__NR_link, 2},
    {__NR_unlink, 1},                  {__NR_symlink, 2},                 {__NR_readlink, 3},
    {__NR_chmod, 2},                   {__NR_fchmod, 2},                  {__NR_chown, 3},
    {__NR_fchown, 3},                  {__NR_lchown, 3},                  {__NR_umask, 1},
    {__NR_gettimeofday, 2},            {__NR_getrlimit, 2},               {__NR_getrusage, 2},
    {__NR_sysinfo, 1},                 {__NR_times, 1},                   {__NR_ptrace, 4},
    {__NR_getuid, 0},                  {__NR_syslog, 3},                  {__NR_getgid, 0},
    {__NR_setuid, 1},                  {__NR_setgid, 1},                  {__NR_geteuid, 0},
    {__NR_getegid, 0},                 {__NR_setpgid, 2},                 {__NR_getppid, 0},
    {__NR_getpgrp, 0},                 {__NR_setsid, 0},                  {__NR_setreuid, 2},
    {__NR_setregid, 2},                {__NR_getgroups, 2},               {__NR_setgroups, 2},
    {__NR_setresuid, 3},               {__NR_getresuid, 3},               {__NR_setresgid, 3},
    {__NR_getresgid, 3},               {__NR_getpgid, 1},                 {__NR_setfsuid, 1},
    {__NR_setfsgid, 1},                {__NR_getsid, 1},                  {__NR_capget, 2},
    {__NR_capset, 2},                  {__NR_rt_sigpending, 2},           {__NR_rt_sigtimedwait, 4},
    {__NR_rt_sigqueueinfo, 3},         {__NR_rt_sigsuspend, 2},           {__NR_sigaltstack, 2},
    {__NR_utime, 2},                   {__NR_mknod, 3},                   {__NR_uselib, 1},
    {__NR_personality, 1},             {__NR_ustat, 2},                   {__NR_statfs, 2},
    {__NR_fstatfs, 2},                 {__NR_sysfs, 3},                   {__NR_getpriority, 2},
    {__NR_setpriority, 3},             {__NR_sched_setparam, 2},          {__NR_sched_getparam, 2},
    {__NR_sched_setscheduler, 3},      {__NR_sched_getscheduler, 1},      {__NR_sched_get_priority_max, 1},
    {__NR_sched_get_priority_min, 1},  {__NR_sched_rr_get_interval, 2},   {__NR_mlock, 2},
    {__NR_munlock, 2},                 {__NR_mlockall, 1},                {__NR_munlockall, 0},
    {__NR_vhangup, 0},                 {__NR_modify_ldt, 3},              {__NR_pivot_root, 2},
    {__NR__sysctl, 1},                 {__NR_prctl, 5},                   {__NR_arch_prctl, 2},
    {__NR_adjtimex, 1},                {__NR_setrlimit, 2},               {__NR_chroot, 1},
    {__NR_sync, 0},                    {__NR_acct, 1},                    {__NR_settimeofday, 2},
    {__NR_mount, 5},                   {__NR_umount2, 2},                 {__NR_swapon, 2},
    {__NR_swapoff, 1},                 {__NR_reboot, 4},                  {__NR_sethostname, 2},
    {__NR_setdomainname, 2},           {__NR_iopl, 1},                    {__NR_ioperm, 3},
    {__NR_create_module, 2},           {__NR_init_module, 3},             {__NR_delete_module, 2},
    {__NR_get_kernel_syms, 1},         {__NR_query_module, 5},            {__NR_quotactl, 4},
    {__NR_nfsservctl, 3},              {__NR_getpmsg, 5},                 {__NR_putpmsg, 5},
    {__NR_afs_syscall, 5},             {__NR_tuxcall, 3},                 {__NR_security, 3},
    {__NR_gettid, 0},                  {__NR_readahead, 3},               {__NR_setxattr, 5},
    {__NR_lsetxattr, 5},               {__NR_fsetxattr, 5},               {__NR_getxattr, 4},
    {__NR_lgetxattr, 4},               {__NR_fgetxattr, 4},               {__NR_listxattr, 3},
    {__NR_llistxattr, 3},              {__NR_flistxattr, 3},              {__NR_removexattr, 2},
    {__NR_lremovexattr, 2},            {__NR_fremovexattr, 2},            {__NR_tkill, 2},
    {__NR_time, 1},                    {__NR_futex, 6},                   {__NR_sched_setaffinity, 3},
    {__NR_sched_getaffinity, 3},       {__NR_set_thread_area, 1},         {__NR_io_setup, 2},
    {__NR_io_destroy, 1},              {__NR_io_getevents, 5},            {__NR_io_submit, 3},
    {__NR_io_cancel, 3},               {__NR_get_thread_area, 1},         {__NR_lookup_dcookie, 3},
    {__NR_epoll_create, 1},            {__NR_epoll_ctl_old, 4},           {__NR_epoll_wait_old, 4},
    {__NR_remap_file_pages, 5},        {__NR_getdents64, 3},              {__NR_set_tid_address, 1},
    {__NR_restart_syscall, 0},         {__NR_semtimedop, 4},              {__NR_fadvise64, 4},
    {__NR_timer_create, 3},            {__NR_timer_settime, 4},           {__NR_timer_gettime, 2},
    {__NR_timer_getoverrun, 1},        {__NR_timer_delete, 1},            {__NR_clock_settime, 2},
    {__NR_clock_gettime, 2},           {__NR_clock_getres, 2},            {__NR_clock_nanosleep, 4},
    {__NR_exit_group, 1},              {__NR_epoll_wait, 4},              {__NR_epoll_ctl, 4},
    {__NR_tgkill, 3},                  {__NR_utimes, 2},                  {__NR_vserver, 5},
    {__NR_mbind, 6},                   {__NR_set_mempolicy, 3},           {__NR_get_mempolicy, 5},
    {__NR_mq_open, 4},                 {__NR_mq_unlink, 1},               {__NR_mq_timedsend, 5},
    {__NR_mq_timedreceive, 5},         {__NR_mq_notify, 2},               {__NR_mq_getsetattr, 3},
    {__NR_kexec_load, 4},              {__NR_waitid, 5},                  {__NR_add_key, 5},
    {__NR_request_key, 4},             {__NR_keyctl, 5},                  {__NR_ioprio_set, 3},
    {__NR_ioprio_get, 2},              {__NR_inotify_init, 0},            {__NR_inotify_add_watch, 3},
    {__NR_inotify_rm_watch, 2},        {__NR_migrate_pages, 4},           {__NR_openat, 4},
    {__NR_mkdirat, 3},                 {__NR_mknodat, 4},                 {__NR_fchownat, 5},
    {__NR_futimesat, 3},               {__NR_newfstatat, 4},              {__NR_unlinkat, 3},
    {__NR_renameat, 4},                {__NR_linkat, 5},                  {__NR_symlinkat, 3},
    {__NR_readlinkat, 4},              {__NR_fchmodat, 3},                {__NR_faccessat, 3},
    {__NR_pselect6, 6},                {__NR_ppoll, 5},                   {__NR_unshare, 1},
    {__NR_set_robust_list, 2},         {__NR_get_robust_list, 3},         {__NR_splice, 6},
    {__NR_tee, 4},                     {__NR_sync_file_range, 4},         {__NR_vmsplice, 4},
    {__NR_move_pages, 6},              {__NR_utimensat, 4},               {__NR_epoll_pwait, 6},
    {__NR_signalfd, 3},                {__NR_timerfd_create, 2},          {__NR_eventfd, 1},
    {__NR_fallocate, 4},               {__NR_timerfd_settime, 4},         {__NR_timerfd_gettime, 2},
    {__NR_accept4, 4},                 {__NR_signalfd4, 4},               {__NR_eventfd2, 2},
    {__NR_epoll_create1, 1},           {__NR_dup3, 3},                    {__NR_pipe2, 2},
    {__NR_inotify_init1, 1},           {__NR_preadv, 5},                  {__NR_pwritev, 5},
    {__NR_rt_tgsigqueueinfo, 4},       {__NR_perf_event_open, 5},         {__NR_recvmmsg, 5},
    {__NR_fanotify_init, 2},           {__NR_fanotify_mark, 5},           {__NR_prlimit64, 4},
    {__NR_name_to_handle_at, 5},       {__NR_open_by_handle_at, 3},       {__NR_clock_adjtime, 2},
    {__NR_syncfs, 1},                  {__NR_sendmmsg, 4},                {__NR_setns, 2},
    {__NR_getcpu, 3},                  {__NR_process_vm_readv, 6},        {__NR_process_vm_writev, 6},
    {__NR_kcmp, 5},                    {__NR_finit_module, 3},            {__NR_sched_setattr, 3},
    {__NR_sched_getattr, 4},           {__NR_renameat2, 5},               {__NR_seccomp, 3},
    {__NR_getrandom, 3},               {__NR_memfd_create, 2},            {__NR_kexec_file_load, 5},
    {__NR_bpf, 3},                     {__NR_execveat, 5},                {__NR_userfaultfd, 1},
    {__NR_membarrier, 3},              {__NR_mlock2, 3},                  {__NR_copy_file_range, 6},
    {__NR_preadv2, 6},                 {__NR_pwritev2, 6},                {__NR_pkey_mprotect, 4},
    {__NR_pkey_alloc, 2},              {__NR_pkey_free, 1},               {__NR_statx, 5},
    {__NR_io_pgetevents, 6},           {__NR_rseq, 4},                    {__NR_pidfd_send_signal, 4},
    {__NR_io_uring_setup, 2},          {__NR_io_uring_enter, 6},          {__NR_io_uring_register, 4},
    {__NR_open_tree, 3},               {__NR_move_mount, 5},              {__NR_fsopen, 2},
    {__NR_fsconfig, 5},                {__NR_fsmount, 3},                 {__NR_fspick, 3},
    {__NR_pidfd_open, 2},              {__NR_clone3, 2},                  {__NR_close_range, 3},
    {__NR_openat2, 4},                 {__NR_pidfd_getfd, 3},             {__NR_faccessat2, 4},
    {__NR_process_madvise, 5},         {__NR_epoll_pwait2, 6},            {__NR_mount_setattr, 5},
    {__NR_quotactl_fd, 4},             {__NR_landlock_create_ruleset, 3}, {__NR_landlock_add_rule, 4},
    {__NR_landlock_restrict_self, 2},  {__NR_memfd_secret, 1},            {__NR_process_mrelease, 2},
    {__NR_futex_waitv, 5},             {__NR_set_mempolicy_home_node, 4},
    // Newer than some build hosts' <asm/unistd_64.h>, hence literal numbers.
    {451 /* cachestat */, 4},
    {452 /* fchmodat2 */, 4},
    {453 /* map_shadow_stack */, 3},
    {454 /* futex_wake */, 4},
    {455 /* futex_wait */, 6},
    {456 /* futex_requeue */, 4},
    {457 /* statmount */, 4},
    {458 /* listmount */, 4},
    {459 /* lsm_get_self_attr */, 4},
    {460 /* lsm_set_self_attr */, 4},
    {461 /* lsm_list_modules */, 3},
    {462 /* mseal */, 3},
    {463 /* setxattrat */, 6},
    {464 /* getxattrat */, 6},
    {465 /* listxattrat */, 5},
    {466 /* removexattrat */, 4},
    {467 /* open_tree_attr */, 5},
};

struct ArityTable {
  int8_t nargs[kSyscallCount];
};

constexpr ArityTable build_arity() {
  ArityTable t{};
  for (int8_t& n : t.nargs) n = -1;
  for (const ArityRow& r : kArityRows) t.nargs[r.nr] = int8_t(r.nargs);
  return t;
}

constexpr ArityTable kArity = build_arity();

}  // namespace

int syscall_nargs(long nr) {
  if (nr < 0 || nr >= long(kSyscallCount)) return -1;
  return kArity.nargs[nr];
}

}  // namespace flatux::strace
