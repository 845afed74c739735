// Shared subtrees: mount --make-{shared,rshared,private,slave,unbindable},
// bind mounts of shared mounts joining the peer group, mounts and unmounts
// under a shared mount propagating to its peers and slaves (and not back
// from a slave, nor after make-private), and the optional fields of
// /proc/self/mountinfo (shared:N, master:N, unbindable).
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"


static void make_dirs(const char* const* rels) {
  for (; *rels; rels++) REQUIRE(mkdir(at("%s", *rels), 0755) == 0, "mkdir %s: %s", *rels, strerror(errno));
}

static void touch(const char* rel) { REQUIRE(touch_at(rel) == 0, "%s: %s", rel, strerror(errno)); }

// The optional fields of the topmost mount at `rel`: shared:N, master:N
// (0 when absent) and unbindable. 0 when no mount is there.
struct Tags {
  int shared, master, unbindable;
};

static int tags_of(const char* rel, struct Tags* out) {
  const char* point = at("%s", rel);
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    char pt[PATH_MAX];
    int n = 0;
    if (sscanf(line, "%*d %*d %*s %*s %4095s %*s%n", pt, &n) != 1 || strcmp(pt, point) != 0) continue;
    struct Tags t = {0, 0, 0};
    char* sep = strstr(line, " - ");
    if (!sep) continue;
    *sep = 0;
    for (char* tok = strtok(line + n, " "); tok; tok = strtok(NULL, " ")) {
      sscanf(tok, "shared:%d", &t.shared);
      sscanf(tok, "master:%d", &t.master);
      if (strcmp(tok, "unbindable") == 0) t.unbindable = 1;
    }
    *out = t;
    found = 1;
  }
  fclose(f);
  return found;
}

static int bind(const char* from, const char* to) { return mount(at("%s", from), at("%s", to), NULL, MS_BIND, NULL); }
static int change(const char* rel, unsigned long flags) { return mount("none", at("%s", rel), NULL, flags, NULL); }

// busybox's testsuite "mount bind+rshared": two self-bound rshared
// folders, the second bound on the first, then a third folder bound on the
// second shows through both.
static void test_rshared(void) {
  puts("bind+rshared");
  const char* dirs[] = {"dir", "s1", "s2", NULL};
  make_dirs(dirs);
  touch("dir/a");
  touch("dir/b");
  CHECK_OK(bind("s1", "s1"));
  CHECK_OK(change("s1", MS_SHARED | MS_REC));
  CHECK_OK(bind("s2", "s2"));
  CHECK_OK(change("s2", MS_SHARED | MS_REC));
  CHECK_OK(bind("s2", "s1"));
  CHECK_OK(bind("dir", "s2"));
  CHECK(exists_at("s2/a") && exists_at("s2/b"));
  CHECK(exists_at("s1/a") && exists_at("s1/b"), "the bind on s2 did not propagate to its peer on s1");
  struct Tags t1, t2;
  REQUIRE(tags_of("s1", &t1) && tags_of("s2", &t2));
  CHECK(t1.shared > 0 && t1.shared == t2.shared && !t1.master, "s1 shared:%d s2 shared:%d", t1.shared,
        t2.shared);
  // Unmounting the copy on s1 takes the one on s2 along (its peer).
  CHECK_OK(umount(at("s1")));
  CHECK(!exists_at("s2/a") && !exists_at("s1/a"));
  CHECK_OK(umount(at("s2")));
  CHECK_OK(umount(at("s1")));
  CHECK_OK(umount(at("s1")));
  CHECK_ERR(umount(at("s1")), EINVAL);
}

static void test_private_and_slave(void) {
  puts("make-private stops propagation; a slave receives but does not send");
  const char* dirs[] = {"p1", "p2", "m1", "m2", NULL};
  make_dirs(dirs);
  CHECK_OK(bind("p1", "p1"));
  CHECK_OK(change("p1", MS_SHARED));
  CHECK_OK(bind("p1", "p2"));  // a peer
  CHECK_OK(mkdir(at("p1/x"), 0755));
  CHECK_OK(mount("none", at("p1/x"), "tmpfs", 0, "size=1m"));
  touch("p1/x/seen");
  CHECK(exists_at("p2/x/seen"), "no copy in the peer");
  CHECK_OK(umount(at("p2/x")));  // an unmount propagates too
  CHECK(!exists_at("p1/x/seen"));
  CHECK_OK(change("p2", MS_PRIVATE));
  struct Tags t;
  REQUIRE(tags_of("p2", &t));
  CHECK(!t.shared && !t.master);
  CHECK_OK(mount("none", at("p1/x"), "tmpfs", 0, "size=1m"));
  touch("p1/x/seen");
  CHECK(!exists_at("p2/x/seen"), "a private mount received a mount");
  CHECK_OK(umount(at("p1/x")));
  CHECK_OK(umount(at("p2")));
  CHECK_OK(umount(at("p1")));

  CHECK_OK(bind("m1", "m1"));
  CHECK_OK(change("m1", MS_SHARED));
  CHECK_OK(bind("m1", "m2"));
  CHECK_OK(change("m2", MS_SLAVE));
  struct Tags t1, t2;
  REQUIRE(tags_of("m1", &t1) && tags_of("m2", &t2));
  CHECK(t1.shared > 0 && !t2.shared && t2.master == t1.shared, "m1 shared:%d m2 shared:%d master:%d",
        t1.shared, t2.shared, t2.master);
  CHECK_OK(mkdir(at("m1/x"), 0755));
  CHECK_OK(mkdir(at("m1/y"), 0755));
  CHECK_OK(mount("none", at("m1/x"), "tmpfs", 0, "size=1m"));
  touch("m1/x/seen");
  CHECK(exists_at("m2/x/seen"), "the slave did not receive");
  struct Tags tx;
  REQUIRE(tags_of("m2/x", &tx));
  CHECK(tx.master > 0 && !tx.shared, "copy in the slave: shared:%d master:%d", tx.shared, tx.master);
  CHECK_OK(mount("none", at("m2/y"), "tmpfs", 0, "size=1m"));
  touch("m2/y/seen");
  CHECK(!exists_at("m1/y/seen"), "the slave sent a mount to its master");
  CHECK_OK(umount(at("m2/y")));
  CHECK_OK(umount(at("m1/x")));
  CHECK(!exists_at("m2/x/seen"), "the unmount did not reach the slave");
  CHECK_OK(umount(at("m2")));
  CHECK_OK(umount(at("m1")));
}

static void test_unbindable_and_errors(void) {
  puts("unbindable; bad propagation requests");
  const char* dirs[] = {"u1", "u2", "plain", NULL};
  make_dirs(dirs);
  CHECK_OK(bind("u1", "u1"));
  CHECK_OK(change("u1", MS_UNBINDABLE));
  struct Tags t;
  REQUIRE(tags_of("u1", &t));
  CHECK(t.unbindable && !t.shared);
  CHECK_ERR(bind("u1", "u2"), EINVAL);
  // A recursive bind of the folder above leaves the unbindable one out.
  CHECK_OK(mount(dir, at("u2"), NULL, MS_BIND | MS_REC, NULL));
  CHECK(!tags_of("u2/u1", &t), "the unbindable mount came along");
  CHECK_OK(umount2(at("u2"), MNT_DETACH));
  CHECK_ERR(change("u1", MS_SHARED | MS_PRIVATE), EINVAL);
  CHECK_ERR(change("plain", MS_SHARED), EINVAL);  // not a mount point
  CHECK_OK(change("u1", MS_PRIVATE));
  REQUIRE(tags_of("u1", &t));
  CHECK(!t.unbindable);
  CHECK_OK(umount(at("u1")));
}

int main(int argc, char** argv) {
  guest_name = "propagation";
  REQUIRE(argc == 2, "usage: propagation SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=4m");

  test_rshared();
  test_private_and_slave();
  test_unbindable_and_errors();

  CHECK_OK(umount(dir));
  return guest_finish();
}
