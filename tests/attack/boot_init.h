// A hostfs attacker booted: init of an ext4 image whose kernel was given
// hostfs=JAIL. Called with "--boot JAIL" first, it mounts that folder at
// /mnt and makes it its root, so it works on the same host folder, by the
// same guest paths, as under `flatux run --root JAIL`; at the end it says
// "ATTACK_STATUS=N" and powers the kernel off (init must not exit).
#pragma once
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

static int boot_booted;

static int boot_exit(int status) {
  if (!boot_booted) return status;
  printf("ATTACK_STATUS=%d\n", status);
  fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  return status;
}

// Drops "--boot JAIL" from the arguments once the folder is the root.
static void boot_enter(int* argc, char*** argv) {
  if (*argc < 3 || strcmp((*argv)[1], "--boot") != 0) return;
  boot_booted = 1;
  const char* jail = (*argv)[2];
  mkdir("/mnt", 0755);
  if (mount("none", "/mnt", "hostfs", 0, jail) != 0 || chroot("/mnt") != 0 || chdir("/") != 0) {
    printf("boot: hostfs of %s as the root: %s\n", jail, strerror(errno));
    boot_exit(2);
  }
  (*argv)[2] = (*argv)[0];
  *argv += 2;
  *argc -= 2;
}
