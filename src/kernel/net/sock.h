// Shared pieces of the socket syscalls (src/kernel/net/).
//
// AF_UNIX names. Paths are resolved through the VFS, so they are confined
// to the guest's root, and the host only ever sees magic links of O_PATH
// descriptors: a bind creates "/proc/self/fd/<dir>/<base>" (<dir> the
// parent directory, <base> one plain component); connect and sendto reach
// "/proc/self/fd/<fd>", the socket file itself opened with its symlinks
// resolved inside the root. The host reports the bind spelling back from
// getsockname, getpeername, accept and recvfrom; the registry below maps
// it to the guest's. A name keeps its directory descriptor open for as
// long as a socket refers to it, so the host spelling stays unique.
//
// Abstract names would be shared with every host process (and with other
// flatux instances); they are bound on the host with a per-kernel random
// tag in front, which is stripped again on the way back. A name too long to
// follow the tag (Linux allows 107 bytes) is bound as a SHA-256 digest of
// it behind a second tag, and registered like a path so the guest gets its
// spelling back (sockaddr.cpp).
#pragma once
#include <atomic>

#include "kernel/boot/boot_config.h"
#include <cstddef>
#include <cstdint>
#include <sys/socket.h>
#include <sys/un.h>

#include "kernel/kernel.h"
#include "kernel/vfs/file.h"

namespace flatux {

constexpr size_t kSunPathMax = sizeof(sockaddr_un::sun_path);  // 108
constexpr size_t kSunPathOff = offsetof(sockaddr_un, sun_path);  // 2
constexpr size_t kTagLen = 8;  // abstract-name tag bytes (hex digits)
constexpr char kLongTagMark = '~';  // first tag byte of hashed long abstract names
constexpr char kNodeTagMark = '^';  // first tag byte of names bound on the kernel's filesystems
constexpr size_t kNodeIdLen = 16;   // hex digits of such a name's number

struct NetState;

// Who the peer is, in guest terms, as recorded when the connection was made.
struct PeerCred {
  int pid = 0;  // 0 when unknown
  uint32_t uid = 0, gid = 0;
};

struct UnixName {
  std::atomic<int> refs{1};
  UnixName* next = nullptr;
  NetState* registry = nullptr;  // set once registered
  File* dir = nullptr;     // keeps the host directory descriptor alive
  size_t host_len = 0;     // bytes of the host's sun_path, NUL included
  size_t guest_len = 0;    // bytes of the guest's sun_path, NUL included
  char host[kSunPathMax + 1]{};
  char guest[kSunPathMax + 1]{};
  PeerCred owner;  // who bound it (or last listened on it); guarded by NetState::lock
  bool abstract = false;  // a long abstract name: host and guest are exact sun_path bytes
  // A path on a filesystem the kernel keeps (tmpfs, ext4): the socket node
  // there, by which connect finds the host's abstract name (also abstract).
  bool on_node = false;
  uint64_t node_dev = 0, node_ino = 0;
};

struct ConnectRecord;
struct SockPriv;
struct NetlinkRefusals;

// Files with no host descriptor in flight over SCM_RIGHTS (scm_files.cpp).
struct ScmTicket;
struct ScmTickets {
  KMutex lock;
  ScmTicket* list = nullptr;
  std::atomic<int> count{0};
};

struct NetState {
  KMutex lock;
  UnixName* names = nullptr;  // every live bound path name
  ConnectRecord* connects = nullptr;  // connected AF_UNIX clients not yet accepted (peercred.cpp)
  char tag[kTagLen];
  Heap* heap = nullptr;
  std::atomic<uint64_t> node_names{0};  // numbers of names bound on the kernel's filesystems
  // hostfwd=: guest ports that are other host ports (set at boot, then read only).
  PortForward forwards[BootConfig::kMaxForwards]{};
  int nforwards = 0;
  ScmTickets tickets;
};

// A guest socket's kernel-side data (File::priv).
struct SockPriv {
  NetState* net = nullptr;     // its kernel's
  UnixName* local = nullptr;   // its bound name, or its listener's when accepted
  UnixName* peer = nullptr;    // the name it connected to
  PeerCred peer_cred;          // guarded by NetState::lock
  bool netlink = false;        // an AF_NETLINK socket: requests are checked (netlink.cpp)
  // A NETLINK_KOBJECT_UEVENT socket (netlink.cpp): no uevents reach it
  // (flatux has no device events to send, and the host's are not the
  // guest's), over a host route socket in no group; its groups as bound.
  bool uevent = false;
  uint32_t uevent_groups = 0;
  NetlinkRefusals* refusals = nullptr;  // its refused requests awaiting their answers
  NetState* connect_registry = nullptr;  // set once it has had a ConnectRecord
};

// A socket File over host socket `host_fd` (owned from then on: closed on
// failure too). `flags` are O_RDWR plus O_NONBLOCK as wanted.
File* sock_file_adopt(Kernel& k, int host_fd, uint32_t flags);
// The socket behind a File, or nullptr when it is not one of ours (a socket
// received over SCM_RIGHTS is wrapped as one too).
SockPriv* sock_priv(File& f);
bool is_sock_file(const File& f);

void unix_name_put(Heap* heap, UnixName* n);
// A new reference to the registered name the host spells `host_path`
// (`len` bytes of sun_path: a path up to its NUL, or an abstract name), or
// nullptr.
UnixName* unix_name_find(Kernel& k, const char* host_path, size_t len);
// Records a successful bind of `name` (takes the caller's reference).
void unix_name_register(Kernel& k, UnixName* name);

// A guest socket address turned into what the host is given. For an
// AF_UNIX path, `dir` holds the O_PATH file the host path goes through for
// the duration of the call and `name` (for bind) describes the name to
// register.
struct HostAddr {
  sockaddr_storage sa{};
  socklen_t len = 0;
  File* dir = nullptr;
  UnixName* name = nullptr;
  Heap* heap = nullptr;
  HostAddr() = default;
  HostAddr(const HostAddr&) = delete;
  HostAddr& operator=(const HostAddr&) = delete;
  ~HostAddr();
};

enum class AddrUse { kBind, kConnect, kSend };

// Reads a guest sockaddr of `len` bytes for the host socket `host_fd` and
// translates it. Errors as Linux gives them for bad addresses (EINVAL,
// EFAULT, ENAMETOOLONG, ENOENT...). An AF_UNIX address given to a socket
// of another family goes to the host untranslated, which refuses it.
long addr_from_user(Task& t, int host_fd, uint64_t guest, uint64_t len, AddrUse use, HostAddr* out);
// Turns an address the host reported into the guest's view, in place.
// `local`: the socket's own name (getsockname), else a peer's.
void addr_to_guest(Task& t, File* sock, sockaddr_storage& sa, socklen_t& len, bool local = false);

// hostfwd= (hostfwd.cpp): a guest's IPv4/IPv6 address on host socket
// host_fd as the host's: a bind to a forwarded guest port binds its host
// port (and a bind to a forwarded host port is EADDRINUSE: it is taken),
// a connect or send to a forwarded port on a loopback address reaches the
// host port. And back: a forwarded host port in the socket's own name, or
// in a loopback peer's, is shown as the guest port.
long forward_to_host(NetState& ns, int host_fd, sockaddr_storage& sa, socklen_t len, AddrUse use);
void forward_to_guest(NetState& ns, int host_fd, sockaddr_storage& sa, socklen_t len, bool local);
// Linux's move_addr_to_user: copies at most *guest_lenp bytes and stores
// the full length.
long addr_put_user(const sockaddr_storage& sa, socklen_t len, uint64_t guest_addr,
                   uint64_t guest_lenp);
// A fresh abstract name for an AF_UNIX socket bound without one.
long unix_autobind(Task& t, int host_fd);

// bind of a NETLINK_KOBJECT_UEVENT socket: its groups are kept, not
// joined on the host (netlink.cpp).
long uevent_bind(SockPriv& p, int host_fd, sockaddr_storage& sa, socklen_t len);
// NETLINK_ADD_MEMBERSHIP / NETLINK_DROP_MEMBERSHIP of such a socket.
long uevent_membership(SockPriv& p, int opt, uint32_t group);

// SO_PEERCRED / SCM_CREDENTIALS values from the host in guest terms.
void peer_cred_to_guest(Task& t, File* sock, ucred& c);
// The caller as a peer: its pid and effective ids.
PeerCred peer_cred_of(Task& t);
// A connected AF_UNIX stream or seqpacket client remembers who connected,
// so that accept() can tell its peer (peercred.cpp).
void connect_record(Task& t, File& client);
// Drops the record of a client socket being released.
void connect_forget(SockPriv* client);
// Sets an accepted AF_UNIX socket's peer from the connecting guest's
// record, when the client is a guest socket still open.
void accept_find_peer(Task& t, File& accepted);

// AF_NETLINK (NETLINK_ROUTE only, read-only): sends the message in `km`
// (iovecs checked by access_ok, name and control in kernel memory) on the
// netlink socket `f` after copying its data into kernel memory; requests
// that are not queries are refused with Linux's -EPERM answer.
long netlink_sendmsg(Task& t, File& f, msghdr& km, int flags);
// After `bytes` were received into the guest's iovecs: the answers to
// refused requests made Linux's (a peek leaves them to be made again).
void netlink_received(SockPriv& p, const iovec* iov, size_t n, size_t bytes, bool peek);
// Frees what a netlink socket kept.
void netlink_release(Heap* heap, SockPriv& p);
// connect() destinations: only the host kernel itself.
long netlink_check_dest(const sockaddr_storage& sa, socklen_t len);

// ioctl on a socket: queue sizes and the interface queries (SIOCGIF*).
long sock_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg);

// Installs a socket File as a new descriptor (drops the caller's reference).
long install_file(Task& t, File* f, bool cloexec);

// SCM_RIGHTS of a file with no host descriptor (scm_files.cpp): the host
// descriptor to send in its place (a ticket's, for the caller to close once
// sent, then sweep), or -ETOOMANYREFS/-ENOMEM/-EMFILE...
long scm_ticket_issue(NetState& ns, File* f);
// The file a received host descriptor is the ticket of (a new reference;
// the descriptor is closed), or nullptr when it is no ticket of this kernel.
File* scm_ticket_redeem(NetState& ns, int host_fd);
// Lets go the tickets no message carries any more.
void scm_tickets_sweep(NetState& ns);


}  // namespace flatux
