// The owners, modes and device nodes guests give hostfs files, kept by
// flatux instead of the host (internal.h says where).
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "host/open_how_table.h"
#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"

namespace flatux {
namespace {

constexpr int kFchmodat2 = 452;  // Linux 6.6; not in every build host's headers

// The record in user.flatux.attr.
struct Record {
  uint32_t version;
  uint32_t mode;  // the guest's 07777 bits
  uint32_t uid, gid;
};
constexpr uint32_t kRecordVersion = 1;

bool read_record(int fd, Record* r) {
  FdPath p(fd);
  long n = host::sys(SYS_getxattr, p.s, kAttrXattr, r, sizeof *r);
  return n == (long)sizeof *r && r->version == kRecordVersion;
}

long write_record(int fd, const Record& r) {
  FdPath p(fd);
  return host::sys(SYS_setxattr, p.s, kAttrXattr, &r, sizeof r, 0);
}

// chmod of the file behind fd, which may be an O_PATH descriptor.
long chmod_fd(int fd, uint32_t mode) {
  // A folder's set-group-ID goes through the one path the host's filter
  // lets it (host/open_how_table.h); -ENOTDIR: not a folder after all.
  if (mode & S_ISGID) {
    long r = host::sys(SYS_fchmodat, fd, sealed_dot(), mode);
    if (r != -ENOTDIR) return r;
  }
  long r = host::sys(kFchmodat2, fd, "", mode, AT_EMPTY_PATH);
  if (r != -ENOSYS) return r;
  FdPath p(fd);
  return host::sys(SYS_fchmodat, AT_FDCWD, p.s, mode);
}

// Parses a decimal (or, with base 8, octal) field ending at `sep` or the end.
bool take_number(std::string_view* s, int base, char sep, uint64_t* out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s->size() && (*s)[i] != sep; i++) {
    char c = (*s)[i];
    if (c < '0' || c >= '0' + base) return false;
    v = v * (uint64_t)base + (uint64_t)(c - '0');
    if (v > 0xffffffffull) return false;
  }
  if (i == 0) return false;
  *out = v;
  *s = tail(*s, i + 1);
  return true;
}

// The bits a host file must not carry: set-user-ID, and set-group-ID but
// on a folder (where the host keeps it: it only hands the folder's group
// and the bit on to what is made inside), and sticky on a regular file
// (the sign of a record).
uint32_t host_withheld_bits(uint32_t type) {
  return type == S_IFDIR ? S_ISUID : S_ISUID | S_ISGID | S_ISVTX;
}

}  // namespace

FdPath::FdPath(long fd) {
  KFmt f(s, sizeof s);
  f.str("/proc/self/fd/").dec(fd).c_str();
}

bool parse_node_link(std::string_view target, struct stat* st) {
  std::string_view magic(kNodeMagic);
  if (!starts_with(target, magic) || target.size() < magic.size() + 2) return false;
  std::string_view s = tail(target, magic.size());
  char kind = s[0];
  if ((kind != 'c' && kind != 'b') || s[1] != ':') return false;
  s = tail(s, 2);
  uint64_t major, minor, mode, uid, gid;
  if (!take_number(&s, 10, ':', &major) || !take_number(&s, 10, ':', &minor) ||
      !take_number(&s, 8, ':', &mode) || !take_number(&s, 10, ':', &uid) || !take_number(&s, 10, ':', &gid) ||
      !s.empty())
    return false;
  st->st_mode = (kind == 'c' ? S_IFCHR : S_IFBLK) | ((uint32_t)mode & 07777);
  st->st_rdev = makedev(major, minor);
  st->st_uid = (uint32_t)uid;
  st->st_gid = (uint32_t)gid;
  st->st_size = 0;
  st->st_blocks = 0;
  return true;
}

long format_node_link(uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid, char* out, size_t n) {
  KFmt f(out, n);
  f.str(kNodeMagic).ch(S_ISCHR(mode) ? 'c' : 'b').ch(':').udec(major(rdev)).ch(':').udec(minor(rdev)).ch(':');
  // Octal without the leading 0 KFmt::oct adds: parse_node_link reads base 8.
  char oct[16];
  KFmt o(oct, sizeof oct);
  o.oct(mode & 07777);
  f.str(std::string_view(o.c_str() + 1)).ch(':').udec(uid).ch(':').udec(gid);
  f.c_str();
  return f.truncated() ? -ENAMETOOLONG : 0;
}

void guest_view(HostFs&, int fd, const struct stat& host, GuestNode* n) {
  n->st = host;
  n->record = n->device = false;
  if (S_ISLNK(host.st_mode)) {
    char target[128];  // a node link is short; anything longer is an ordinary link
    long len = host::sys(SYS_readlinkat, fd, "", target, sizeof target);
    if (len > 0 && len < (long)sizeof target && parse_node_link(std::string_view(target, (size_t)len), &n->st))
      n->device = true;
    return;
  }
  if (!(host.st_mode & S_ISVTX) || !(S_ISREG(host.st_mode) || S_ISDIR(host.st_mode))) return;
  Record r;
  if (!read_record(fd, &r)) return;
  n->record = true;
  n->st.st_mode = (host.st_mode & S_IFMT) | (r.mode & 07777);
  n->st.st_uid = r.uid;
  n->st.st_gid = r.gid;
}

void guest_view_at(HostFs& h, int dir, const char* name, const struct stat& host, GuestNode* n) {
  n->st = host;
  n->record = n->device = false;
  if (S_ISLNK(host.st_mode)) {
    char target[128];  // as guest_view: a node link is short
    long len = host::sys(SYS_readlinkat, dir, name, target, sizeof target);
    if (len > 0 && len < (long)sizeof target && parse_node_link(std::string_view(target, (size_t)len), &n->st))
      n->device = true;
    return;
  }
  if (!(host.st_mode & S_ISVTX) || !(S_ISREG(host.st_mode) || S_ISDIR(host.st_mode))) return;
  // The record is read from the file itself, if it is still the one stat saw.
  long fd = host::sys(SYS_openat, dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat now;
  if (host::sys(SYS_fstat, fd, &now) == 0 && now.st_ino == host.st_ino && now.st_dev == host.st_dev)
    guest_view(h, (int)fd, host, n);
  host::sys(SYS_close, fd);
}

long set_guest_owner_mode(HostFs& h, int fd, const struct stat& host, const GuestNode& n, const Attr& a) {
  bool owner = a.mask & (kAttrUid | kAttrGid);
  bool mode_change = a.mask & kAttrMode;
  if (!owner && !mode_change) return 0;
  uint32_t type = host.st_mode & S_IFMT;
  if (h.host_owners || !(type == S_IFREG || type == S_IFDIR)) {
    // The host holds it: as asked (--hostfs-owners=host), or a kind that
    // cannot carry a record, whose set-id bits mean nothing anyway.
    long r = 0;
    if (owner)
      r = host::sys(SYS_fchownat, fd, "", (a.mask & kAttrUid) ? a.uid : -1u, (a.mask & kAttrGid) ? a.gid : -1u,
                    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
    if (r == 0 && mode_change) {
      if (type == S_IFLNK) return -EOPNOTSUPP;  // links have no mode of their own
      r = chmod_fd(fd, h.host_owners ? a.mode : a.mode & ~(uint32_t)(S_ISUID | S_ISGID));
    }
    return r;
  }
  Record want{kRecordVersion, mode_change ? a.mode & 07777 : (uint32_t)n.st.st_mode & 07777,
              (a.mask & kAttrUid) ? a.uid : (uint32_t)n.st.st_uid, (a.mask & kAttrGid) ? a.gid : (uint32_t)n.st.st_gid};
  uint32_t withheld = host_withheld_bits(type);
  bool need = want.uid != host.st_uid || want.gid != host.st_gid || (want.mode & withheld);
  uint32_t host_mode = need ? (want.mode & ~withheld) | S_ISVTX : want.mode;
  long r = 0;
  if (need) {
    r = write_record(fd, want);  // first the record, then the sign of it
    if (r < 0) return r;
  }
  if ((host.st_mode & 07777) != host_mode) r = chmod_fd(fd, host_mode);
  if (r == 0 && !need && n.record) {
    FdPath p(fd);
    host::sys(SYS_removexattr, p.s, kAttrXattr);
  }
  return r;
}

// The VFS gives a new node to its maker through setattr (claim_new_node),
// except for a root caller, which it takes to own what it makes; and the
// set-id bits of the creation mode never reach the host. Those two are
// left here.
bool new_file_needs_adoption(const HostFs& h, uint32_t mode, uint32_t uid, uint32_t gid) {
  bool root_owner_differs = uid == 0 && gid == 0 && (h.host_uid != 0 || h.host_gid != 0);
  return root_owner_differs || (!h.host_owners && (mode & (S_ISUID | S_ISGID)));
}

void adopt_new_file(HostFs& h, int fd, uint32_t mode, uint32_t uid, uint32_t gid) {
  struct stat host;
  if (host::sys(SYS_fstat, fd, &host) < 0) return;
  GuestNode n;
  guest_view(h, fd, host, &n);
  Attr a;
  a.mask = kAttrMode;
  a.mode = mode & 07777;
  if (uid == 0 && gid == 0) {
    a.mask |= kAttrUid | kAttrGid;
    a.uid = a.gid = 0;
  }
  set_guest_owner_mode(h, fd, host, n, a);
}

}  // namespace flatux
