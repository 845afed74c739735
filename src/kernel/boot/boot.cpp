#include "kernel/boot/boot.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>

#include "host/raw_syscall.h"
#include "kernel/block/ubd.h"
#include "kernel/boot/sysfs.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/fs/devpts/devpts.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/procfs/procfs.h"
#include "kernel/printk.h"
#include "kernel/task/process.h"
#include "kernel/time.h"
#include "kernel/tty/console.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

constexpr const char* kDefaultInits[] = {"/sbin/init", "/etc/init", "/bin/init", "/bin/sh"};

void banner(Kernel& k, const BootConfig& boot) {
  printk(k, "<5>Linux version 6.1.0-flatux (flatux " FLATUX_VERSION_STRING
            ") #1 SMP flatux, a user-mode no-MMU kernel");
  printkf(k, [&](KFmt& f) { f.str("<6>Command line: ").str(boot.cmdline); });
  struct sysinfo si;
  uint64_t host_total = 0;
  if (host::sys(SYS_sysinfo, &si) == 0) host_total = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
  printkf(k, [&](KFmt& f) {
    if (k.mem.limit) f.str("<6>Memory: ").udec(k.mem.limit >> 10).str("K available (mem=)");
    else f.str("<6>Memory: ").udec(host_total >> 10).str("K available (the host's; no mem= limit)");
  });
}

long mount_hostfs_root(Kernel& k, const BootConfig& boot, const char** why) {
  Filesystem* root = nullptr;
  long r = hostfs_create(k, boot.hostfs, &root);
  if (r < 0 || (r = k.vfs->mount("/", root, &kHostFsType, boot.root_readonly ? MS_RDONLY : 0, "/dev/root", "/",
                                 boot.hostfs)) < 0) {
    *why = "VFS: Unable to mount root fs on hostfs";
    return r;
  }
  printkf(k, [&](KFmt& f) {
    f.str("<6>VFS: Mounted root (hostfs filesystem) ").str(boot.root_readonly ? "readonly" : "read-write");
    f.str(" on ").str(boot.hostfs).ch('.');
  });
  return 0;
}

// ubdN= devices attached, then root= mounted as ext4 (ext2/ext3 images
// are read by the same driver).
long mount_block_root(Kernel& k, const BootConfig& boot, const char* root, const char** why) {
  for (int i = 0; i < boot.nubd; i++) {
    const UbdParam& u = boot.ubd[i];
    if (long r = ubd_attach(k, u.index, u.path, u.readonly); r < 0) {
      printkf(k, [&](KFmt& f) { f.str("<3>ubd").dec(u.index).str(": cannot open ").str(u.path).str(" (error ").dec(r).ch(')'); });
      *why = "VFS: Unable to mount root fs: a ubd device could not be opened";
      return r;
    }
  }
  if (boot.rootfstype[0] && strcmp(boot.rootfstype, "ext4") != 0 && strcmp(boot.rootfstype, "ext3") != 0 &&
      strcmp(boot.rootfstype, "ext2") != 0) {
    *why = "VFS: Unable to mount root fs: unknown rootfstype";
    return -ENODEV;
  }
  long r = ext4_mount_device(k, root, "/", boot.root_readonly ? MS_RDONLY : 0);
  if (r < 0) {
    printkf(k, [&](KFmt& f) { f.str("<3>VFS: Cannot mount root device \"").str(root).str("\" (error ").dec(r).ch(')'); });
    *why = "VFS: Unable to mount root fs on a ubd device";
    return r;
  }
  // The volume may have refused to be written (a journal to recover): say
  // what the root really is.
  Mount* m = k.vfs->find_exact(k.vfs->init_ns(), "/");
  bool readonly = boot.root_readonly || (m && m->readonly());
  if (m) m->put();
  printkf(k, [&](KFmt& f) {
    f.str("<6>VFS: Mounted root (ext4 filesystem) ").str(readonly ? "readonly" : "read-write");
    f.str(" on device ").str(root).ch('.');
  });
  return 0;
}

// The other filesystems every system expects, as devtmpfs' automount and
// a typical early userspace would mount them.
long mount_system_filesystems(Kernel& k, const char** why) {
  Filesystem *dev = nullptr, *pts = nullptr, *proc = nullptr, *sys = nullptr;
  if (devtmpfs_create(k, &dev) < 0 || devpts_create(k.heap, &pts) < 0 || procfs_create(k.heap, &proc) < 0 ||
      sysfs_create(k.heap, &sys) < 0 ||
      k.vfs->mount("/dev", dev, &kDevFsType, MS_NOSUID, "devtmpfs") < 0 ||
      k.vfs->mount("/dev/pts", pts, &kDevPtsType, MS_NOSUID | MS_NOEXEC, "devpts") < 0 ||
      k.vfs->mount("/proc", proc, &kProcFsType, MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc") < 0 ||
      k.vfs->mount("/sys", sys, &kSysFsType, MS_NOSUID | MS_NODEV | MS_NOEXEC, "sysfs") < 0 ||
      devfs_mount_shm(k) < 0) {
    *why = "cannot mount devtmpfs, devpts, /dev/shm, proc and sysfs";
    return -ENOMEM;
  }
  printk(k, "<6>devtmpfs: mounted");
  return 0;
}

// Splits NUL-separated words into `out` (at most max-1, then nullptr).
int split_words(const char* words, size_t len, int count, const char** out, int max) {
  int n = 0;
  for (size_t off = 0; n < count && n < max - 1 && off < len; n++) {
    out[n] = words + off;
    off += strlen(words + off) + 1;
  }
  out[n] = nullptr;
  return n;
}

long run_init(Kernel& k, const char* path, File* console, const char** why) {
  const BootConfig& b = k.cfg.boot;
  const char* argv[72];
  argv[0] = path;
  split_words(b.init_args, b.init_args_len, b.init_nargs, argv + 1, 71);
  const char* envp[72] = {"HOME=/", "TERM=linux"};
  split_words(b.init_env, b.init_env_len, b.init_nenv, envp + 2, 70);
  const char* exec_why = nullptr;
  long r = spawn_init(k, path, argv, envp, &exec_why, console);
  if (r == 0) printkf(k, [&](KFmt& f) { f.str("<6>Run ").str(path).str(" as init process"); });
  else if (r == -ENOEXEC && exec_why) *why = exec_why;
  return r;
}

long start_init(Kernel& k, File* console, const char** why) {
  const BootConfig& b = k.cfg.boot;
  if (b.init[0]) {
    long r = run_init(k, b.init, console, why);
    if (r < 0) {
      printkf(k, [&](KFmt& f) { f.str("<3>Requested init ").str(b.init).str(" failed (error ").dec(r).ch(')'); });
      *why = "Requested init failed.";
    }
    return r;
  }
  for (const char* path : kDefaultInits) {
    long r = run_init(k, path, console, why);
    if (r == 0) return 0;
    if (r != -ENOENT)
      printkf(k, [&](KFmt& f) { f.str("<3>Starting init: ").str(path).str(" exists but couldn't execute it (error ").dec(r).ch(')'); });
  }
  *why = "No working init found.  Try passing init= option to kernel.";
  return -ENOENT;
}

}  // namespace

long mount_root(Kernel& k, const BootConfig& boot, const char** why) {
  bool hostfs_type = boot.rootfstype[0] == 0 || strcmp(boot.rootfstype, "hostfs") == 0;
  // root= defaults to /dev/ubda when a ubd device is given, else hostfs.
  const char* root = boot.root[0] ? boot.root : boot.nubd ? "/dev/ubda" : "";
  if ((!root[0] || strcmp(root, "/dev/root") == 0 || strcmp(root, "hostfs") == 0) && hostfs_type)
    return mount_hostfs_root(k, boot, why);
  if (strncmp(root, "/dev/ubd", 8) == 0) return mount_block_root(k, boot, root, why);
  printkf(k, [&](KFmt& f) {
    f.str("<3>VFS: Cannot open root device \"").str(root).str("\" (rootfstype=").str(boot.rootfstype).ch(')');
  });
  *why = "VFS: Unable to mount root fs";
  return -ENODEV;
}

long kernel_boot(Kernel& k, const char** why) {
  const BootConfig& boot = k.cfg.boot;
  banner(k, boot);
  long r = mount_root(k, boot, why);
  if (r < 0) return r;
  if ((r = mount_system_filesystems(k, why)) < 0) return r;
  File* console = nullptr;
  if (console_open_initial(k, &console) < 0) printk(k, "<4>Warning: unable to open an initial console.");
  r = start_init(k, console, why);
  if (console) console->put();
  return r;
}

void boot_panic_message(Kernel& k, const char* msg) {
  printkf(k, [&](KFmt& f) { f.str("<0>Kernel panic - not syncing: ").str(msg); });
}

}  // namespace flatux
