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
// Abstract names would be shared with every host process; they are bound on
// the host with a per-kernel random tag in front, which is stripped again on
// the way back.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sys/socket.h>
#include <sys/un.h>

#include "kernel/kernel.h"
#include "kernel/vfs/file.h"

namespace flatux {

constexpr size_t kSunPathMax = sizeof(sockaddr_un::sun_path);  // 108
constexpr size_t kSunPathOff = offsetof(sockaddr_un, sun_path);  // 2
constexpr size_t kTagLen = 8;  // abstract-name tag bytes

struct NetState;

struct UnixName {
  std::atomic<int> refs{1};
  UnixName* next = nullptr;
  NetState* registry = nullptr;  // set once registered
  File* dir = nullptr;     // keeps the host directory descriptor alive
  size_t host_len = 0;     // bytes of the host's sun_path, NUL included
  size_t guest_len = 0;    // bytes of the guest's sun_path, NUL included
  char host[kSunPathMax + 1]{};
  char guest[kSunPathMax + 1]{};
  std::atomic<int> owner_pid{0};  // guest pid that bound it (or last listened on it)
};

struct NetState {
  KMutex lock;
  UnixName* names = nullptr;  // every live bound path name
  char tag[kTagLen];
};

// A guest socket's kernel-side data (File::priv).
struct SockPriv {
  UnixName* local = nullptr;   // its bound name, or its listener's when accepted
  UnixName* peer = nullptr;    // the name it connected to
  std::atomic<int> peer_pid{0};  // the peer's guest pid when known, else 0
};

// A socket File over host socket `host_fd` (owned from then on: closed on
// failure too). `flags` are O_RDWR plus O_NONBLOCK as wanted.
File* sock_file_adopt(Heap* heap, int host_fd, uint32_t flags);
// The socket behind a File, or nullptr when it is not one of ours (a socket
// received over SCM_RIGHTS is wrapped as one too).
SockPriv* sock_priv(File& f);
bool is_sock_file(const File& f);

void unix_name_put(Heap* heap, UnixName* n);
// A new reference to the registered name the host spells `host_path`, or
// nullptr.
UnixName* unix_name_find(Kernel& k, const char* host_path);
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

// Reads a guest sockaddr of `len` bytes and translates it. Errors as Linux
// gives them for bad addresses (EINVAL, EFAULT, ENAMETOOLONG, ENOENT...).
long addr_from_user(Task& t, uint64_t guest, uint64_t len, AddrUse use, HostAddr* out);
// Turns an address the host reported into the guest's view, in place.
void addr_to_guest(Task& t, File* sock, sockaddr_storage& sa, socklen_t& len);
// Linux's move_addr_to_user: copies at most *guest_lenp bytes and stores
// the full length.
long addr_put_user(const sockaddr_storage& sa, socklen_t len, uint64_t guest_addr,
                   uint64_t guest_lenp);
// A fresh abstract name for an AF_UNIX socket bound without one.
long unix_autobind(Task& t, int host_fd);

// SO_PEERCRED / SCM_CREDENTIALS values from the host in guest terms.
void peer_cred_to_guest(Task& t, File* sock, ucred& c);

// Installs a socket File as a new descriptor (drops the caller's reference).
long install_file(Task& t, File* f, bool cloexec);

// Host results of calls that may block: EINTR means a guest signal.
inline long restartable(long r) { return r == -4 /*EINTR*/ ? -512 /*ERESTARTSYS*/ : r; }

}  // namespace flatux
