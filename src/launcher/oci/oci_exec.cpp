#include "launcher/oci/oci_exec.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "kernel/cgroup/cgroup.h"
#include "kernel/kernel.h"
#include "kernel/task/process.h"
#include "kernel/tty/pty.h"
#include "kernel/vfs/file.h"
#include "launcher/oci/oci_bundle.h"
#include "launcher/oci/oci_console.h"
#include "launcher/oci/oci_spec.h"
#include "launcher/sandbox/run_init.h"
#include "launcher/oci/oci_state.h"

namespace flatux::launcher {
namespace {

// Wire format. Request: Header (with the stdio descriptors attached), then
// `length` bytes: an InitIdentity, the working folder, the argument count
// (uint32), the arguments, the environment count, the environment, each
// string NUL-terminated. The same binary is at both ends.
constexpr uint32_t kMagic = 0x43455846;  // "FXEC"
constexpr uint32_t kMaxRequest = 1 << 20;
// kExecTerminal: as kExec, the three descriptors one host terminal (raw).
enum RequestKind : uint32_t { kExec = 1, kFreeze = 2, kThaw = 3, kList = 4, kExecTerminal = 5 };
struct Header {
  uint32_t magic;
  uint32_t kind;    // RequestKind; only kExec and kExecTerminal have a payload and descriptors
  uint32_t length;
};
enum ReplyKind : uint32_t { kStarted = 1, kEnded = 2, kListed = 3 };  // kListed: value bytes of text follow
struct Reply {
  uint32_t kind;
  int32_t value;  // kStarted: the pid or -errno; kEnded: the wait status
};

struct ExecRequest {
  InitIdentity identity;
  std::string cwd;
  std::vector<std::string> args, env;
};

void put_strings(std::string* out, const std::vector<std::string>& v) {
  uint32_t n = (uint32_t)v.size();
  out->append((const char*)&n, sizeof n);
  for (const std::string& s : v) out->append(s.c_str(), s.size() + 1);
}

std::string encode(const ExecRequest& r) {
  std::string out((const char*)&r.identity, sizeof r.identity);
  out.append(r.cwd.c_str(), r.cwd.size() + 1);
  put_strings(&out, r.args);
  put_strings(&out, r.env);
  return out;
}

// A bounded reader over a request from outside the kernel's trust: every
// read is checked.
struct Reader {
  const char* p;
  const char* end;
  bool take(void* dst, size_t n) {
    if ((size_t)(end - p) < n) return false;
    memcpy(dst, p, n);
    p += n;
    return true;
  }
  bool string(std::string* s) {
    const char* nul = (const char*)memchr(p, 0, end - p);
    if (!nul) return false;
    s->assign(p, nul);
    p = nul + 1;
    return true;
  }
  bool strings(std::vector<std::string>* v) {
    uint32_t n;
    if (!take(&n, sizeof n) || n > (uint32_t)(end - p)) return false;
    v->resize(n);
    for (std::string& s : *v)
      if (!string(&s)) return false;
    return true;
  }
};

bool decode(const std::string& data, ExecRequest* r) {
  Reader in{data.data(), data.data() + data.size()};
  return in.take(&r->identity, sizeof r->identity) && in.string(&r->cwd) && in.strings(&r->args) &&
         in.strings(&r->env) && in.p == in.end && !r->args.empty() && !r->args[0].empty() &&
         r->identity.ngroups >= 0 && r->identity.ngroups <= Creds::kMaxGroups && r->identity.nrlimits >= 0 &&
         r->identity.nrlimits <= kNumRlimits;
}

bool read_all(int fd, void* buf, size_t n) {
  char* p = (char*)buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r <= 0 && !(r < 0 && errno == EINTR)) return false;
    if (r > 0) p += r, n -= (size_t)r;
  }
  return true;
}

bool write_all(int fd, const void* buf, size_t n) {
  const char* p = (const char*)buf;
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r <= 0 && !(r < 0 && errno == EINTR)) return false;
    if (r > 0) p += r, n -= (size_t)r;
  }
  return true;
}

// The header and the three descriptors that come with it.
bool receive_header(int conn, Header* h, int fds[3]) {
  char control[CMSG_SPACE(3 * sizeof(int))];
  iovec iov{h, sizeof *h};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
  bool got_fds = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      int* got = (int*)CMSG_DATA(c);
      for (size_t i = 0; i < count; i++) {
        if (i < 3 && count == 3 && !got_fds) fds[i] = got[i];
        else close(got[i]);
      }
      got_fds = got_fds || count == 3;
    }
  return n == (ssize_t)sizeof *h && (got_fds || (h->kind != kExec && h->kind != kExecTerminal)) && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
         h->magic == kMagic && h->length <= kMaxRequest;
}

void reply(int conn, ReplyKind kind, int32_t value) {
  Reply r{kind, value};
  (void)!write_all(conn, &r, sizeof r);
}

// "PID PPID UID COMMAND" of each guest process, the kernel's own view.
std::string guest_processes(flatux::Kernel& k) {
  std::string out;
  Guard g(k.tasks_lock);
  for (Task* t : k.live_tasks()) {
    if (!t || !first_thread_of_process(*t)) continue;
    Process& p = *t->proc;
    char line[96];
    snprintf(line, sizeof line, "%d %d %u %s\n", p.pid, p.parent ? p.parent->pid : 0, p.creds.uid, p.comm);
    out += line;
  }
  return out;
}

}  // namespace

std::string oci_control_path(int dir_fd) { return "/proc/self/fd/" + std::to_string(dir_fd) + "/ctl.sock"; }

int oci_control_listen(const std::string& dir, std::string* error) {
  int d = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", oci_control_path(d).c_str());
  bool ok = d >= 0 && s >= 0 && bind(s, (sockaddr*)&a, sizeof a) == 0 && listen(s, 16) == 0;
  if (!ok) *error = dir + "/ctl.sock: " + strerror(errno);
  if (d >= 0) close(d);
  if (!ok && s >= 0) close(s);
  return ok ? s : -1;
}

void OciExecServer::serve(flatux::Kernel& k, int conn) {
  timeval limit{2, 0};  // a client that stalls does not stall the kernel's process for long
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  Header h{};
  int fds[3] = {-1, -1, -1};
  std::string data;
  ExecRequest r;
  bool ok = receive_header(conn, &h, fds);
  if (ok && (h.kind == kFreeze || h.kind == kThaw)) {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    {
      Guard g(k.tasks_lock);
      cgroup_set_freeze_locked(k, k.cgroups->root, h.kind == kFreeze);
    }
    reply(conn, kStarted, 0);
    close(conn);
    return;
  }
  if (ok && h.kind == kList) {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    std::string text = guest_processes(k);
    reply(conn, kListed, (int32_t)text.size());
    (void)!write_all(conn, text.data(), text.size());
    close(conn);
    return;
  }
  ok = ok && (h.kind == kExec || h.kind == kExecTerminal);
  if (ok) {
    data.resize(h.length);
    ok = read_all(conn, data.data(), data.size()) && decode(data, &r);
  }
  if (!ok) {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    reply(conn, kStarted, -EINVAL);
    close(conn);
    return;
  }
  std::vector<const char*> argv, envp;
  for (const std::string& a : r.args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  for (const std::string& e : r.env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  SpawnSpec s;
  s.path = r.args[0].c_str();
  s.argv = argv.data();
  s.envp = envp.data();
  s.stdio_host_fds = fds;
  s.identity = &r.identity;
  s.cwd = r.cwd.c_str();
  s.entered = true;
  Session session{0, conn};
  File* slave = nullptr;
  if (h.kind == kExecTerminal) {
    // The process's own pty in the kernel (job control, its line
    // discipline), whose master side is the engine's terminal.
    close(fds[1]);
    close(fds[2]);
    long e = pty_host_open(k, fds[0], r.identity.uid, r.identity.gid, &session.pty, &slave);
    if (e < 0) {
      close(fds[0]);
      reply(conn, kStarted, (int32_t)e);
      close(conn);
      return;
    }
    session.terminal = fds[0];
    s.stdio_host_fds = nullptr;
    s.console = slave;
    s.console_ctty = true;
  }
  const char* why = nullptr;
  long err = spawn_process(k, s, &session.pid, &why);
  if (slave) slave->put();
  if (!slave && (err == -EAGAIN || err == -ENOMEM))  // refused before the descriptors were taken over
    for (int fd : fds) close(fd);
  reply(conn, kStarted, err < 0 ? (int32_t)err : session.pid);
  if (err < 0) {
    if (session.pty) pty_host_close(*session.pty);
    close(conn);
  } else {
    sessions_.push_back(session);
  }
}

int OciExecServer::poll_fds(pollfd* fds, int max) {
  int n = 0;
  for (const Session& s : sessions_)
    if (s.pty && n < max && pty_host_room(*s.pty) > 0) fds[n++] = {s.terminal, POLLIN, 0};
  return n;
}

void OciExecServer::polled(flatux::Kernel&, const pollfd* fds, int n) {
  for (int i = 0; i < n; i++) {
    if (!fds[i].revents) continue;
    for (Session& s : sessions_) {
      if (!s.pty || s.terminal != fds[i].fd) continue;
      char buf[4096];
      size_t room = pty_host_room(*s.pty);
      ssize_t got = (fds[i].revents & POLLIN) ? read(s.terminal, buf, room < sizeof buf ? room : sizeof buf) : -1;
      if (got > 0) {
        pty_host_resized(*s.pty);  // (the engine resizes the terminal without telling: looked at as keys come)
        pty_host_input(*s.pty, buf, (size_t)got);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        pty_host_close(*s.pty);  // the engine's side has gone: the session hangs up
        s.pty = nullptr;
      }
      break;
    }
  }
}

void OciExecServer::ended(flatux::Kernel& k) {
  int pid, status;
  while (entered_take_exit(k, &pid, &status))
    for (size_t i = 0; i < sessions_.size(); i++)
      if (sessions_[i].pid == pid) {
        reply(sessions_[i].connection, kEnded, status);
        close(sessions_[i].connection);
        // As the engine closing the pty's master: what the session left
        // running hangs up.
        if (sessions_[i].pty) pty_host_close(*sessions_[i].pty);
        sessions_.erase(sessions_.begin() + (long)i);
        break;
      }
}

namespace {

// The program as the container's PATH finds it in its root (as `flatux
// run` looks up its program).
// A regular file someone may execute, `path` resolved inside the root as
// the guest would resolve it (a link in the image cannot look outside).
bool executable_in_root(int root, const std::string& path) {
  long fd = root < 0 ? -1 : oci_open_in_root(root, path.substr(1), O_PATH);
  struct stat st;
  bool ok = fd >= 0 && fstat((int)fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
  if (fd >= 0) close((int)fd);
  return ok;
}

std::string find_in_root(const std::string& rootfs, const std::vector<std::string>& env, const std::string& prog) {
  if (prog.find('/') != std::string::npos) return prog;
  int root = open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& e : env)
    if (e.compare(0, 5, "PATH=") == 0) path = e.substr(5);
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    std::string dir = path.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    pos = colon == std::string::npos ? path.size() + 1 : colon + 1;
    if (!dir.empty() && dir[0] == '/' && executable_in_root(root, dir + "/" + prog)) {
      close(root);
      return dir + "/" + prog;
    }
  }
  if (root >= 0) close(root);
  return prog;
}

// exec's process: --process FILE, else the container's own process with
// the command line's changes (runc's way).
bool build_request(const OciState& st, std::map<std::string, std::string>& opts, const std::vector<std::string>& args,
                   ExecRequest* r, bool* terminal, std::string* error) {
  OciSpec spec;
  if (opts.count("process")) {
    if (!oci_read_process(opts["process"], &spec, error)) return false;
  } else {
    if (!oci_read_spec(st.bundle + "/config.json", &spec, error)) return false;
    if (args.size() < 2) {
      *error = "exec needs a command or --process";
      return false;
    }
    spec.args.assign(args.begin() + 1, args.end());
    if (opts.count("cwd")) spec.cwd = opts["cwd"];
    if (opts.count("env"))
      for (size_t p = 0, e; p <= opts["env"].size(); p = e + 1) {
        e = opts["env"].find('\n', p);
        if (e == std::string::npos) e = opts["env"].size();
        spec.env.push_back(opts["env"].substr(p, e - p));
      }
    if (opts.count("user")) {
      unsigned uid = 0, gid = 0;
      int n = sscanf(opts["user"].c_str(), "%u:%u", &uid, &gid);
      spec.identity.uid = uid;
      spec.identity.gid = n == 2 ? gid : spec.identity.gid;
    }
  }
  *terminal = opts.count("process") ? spec.terminal : opts.count("tty") != 0;
  r->identity = spec.identity;
  r->cwd = spec.cwd.empty() ? "/" : spec.cwd;
  r->env = spec.env;
  r->args = spec.args;
  r->args[0] = find_in_root(st.rootfs, spec.env, spec.args[0]);
  return true;
}

// Sends a request (an exec's with our stdio attached) and returns the
// connection, or -1.
int send_request(const std::string& dir, RequestKind kind, const std::string& data, std::string* error) {
  int d = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", oci_control_path(d).c_str());
  bool ok = d >= 0 && s >= 0 && connect(s, (sockaddr*)&a, sizeof a) == 0;
  if (d >= 0) close(d);
  Header h{kMagic, kind, (uint32_t)data.size()};
  if (ok) {
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)] = {};
    iovec iov{&h, sizeof h};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (kind == kExec || kind == kExecTerminal) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(c), fds, sizeof fds);
    }
    ok = sendmsg(s, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof h && write_all(s, data.data(), data.size());
  }
  if (!ok) {
    *error = "cannot reach the container's kernel: " + std::string(strerror(errno));
    if (s >= 0) close(s);
    return -1;
  }
  return s;
}


}  // namespace

int oci_exec(const OciContext& ctx, std::map<std::string, std::string>& opts, const std::vector<std::string>& args) {
  if (args.empty()) return oci_fail(ctx, "missing the container id");
  OciState st;
  std::string error, dir = oci_state_dir(ctx.root, args[0]);
  if (!oci_state_read(dir, &st, &error)) return oci_fail(ctx, error);
  if (oci_status(dir, st) != "running") return oci_fail(ctx, "cannot exec in a container that is not running");
  ExecRequest r;
  bool terminal = false;
  if (!build_request(st, opts, args, &r, &terminal, &error)) return oci_fail(ctx, error);
  if (terminal) {
    // The process's stdio is a new pty whose master goes to the engine.
    int slave = -1;
    if (!opts.count("console-socket")) return oci_fail(ctx, "a terminal needs --console-socket");
    if (!oci_console_open(opts["console-socket"], 0, 0, &slave, &error)) return oci_fail(ctx, error);
    // Raw: the line discipline is the kernel's pty's.
    termios raw;
    if (tcgetattr(slave, &raw) == 0) {
      cfmakeraw(&raw);
      tcsetattr(slave, TCSANOW, &raw);
    }
    for (int fd = 0; fd < 3; fd++) dup2(slave, fd);
    close(slave);
  }
  int conn = send_request(dir, terminal ? kExecTerminal : kExec, encode(r), &error);
  if (conn < 0) return oci_fail(ctx, error);
  Reply started{};
  if (!read_all(conn, &started, sizeof started) || started.kind != kStarted)
    return oci_fail(ctx, "the container's kernel did not answer");
  if (started.value < 0) {
    oci_fail(ctx, r.args[0] + ": " + strerror(-started.value));
    return started.value == -ENOENT ? 127 : 126;
  }
  // The process that stands for the guest's on the host: this one, or
  // with --detach a child the engine adopts once we have returned.
  pid_t proxy = opts.count("detach") ? fork() : getpid();
  if (proxy < 0) return oci_fail(ctx, std::string("fork: ") + strerror(errno));
  if (proxy > 0 && opts.count("pid-file")) {
    int fd = open(opts["pid-file"].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::string text = std::to_string(proxy);
    if (fd < 0 || !write_all(fd, text.data(), text.size())) return oci_fail(ctx, opts["pid-file"] + ": " + strerror(errno));
    close(fd);
  }
  if (proxy > 0 && proxy != getpid()) return 0;  // --detach: the child waits
  Reply ended{};
  if (!read_all(conn, &ended, sizeof ended) || ended.kind != kEnded) _exit(255);  // the container ended first
  end_as(ended.value);
}

bool oci_list_processes(const std::string& dir, std::string* text, std::string* error) {
  int conn = send_request(dir, kList, "", error);
  if (conn < 0) return false;
  Reply r{};
  bool ok = read_all(conn, &r, sizeof r) && r.kind == kListed && r.value >= 0 && r.value <= (int32_t)kMaxRequest;
  if (ok) {
    text->resize((size_t)r.value);
    ok = read_all(conn, text->data(), text->size());
  }
  close(conn);
  if (!ok) *error = "the container's kernel did not answer";
  return ok;
}

int oci_freeze(const OciContext& ctx, const std::string& id, bool freeze) {
  OciState st;
  std::string error, dir = oci_state_dir(ctx.root, id);
  if (!oci_state_read(dir, &st, &error)) return oci_fail(ctx, error);
  std::string status = oci_status(dir, st);
  if (status != (freeze ? "running" : "paused"))
    return oci_fail(ctx, "cannot " + std::string(freeze ? "pause" : "resume") + " a container that is " + status);
  int conn = send_request(dir, freeze ? kFreeze : kThaw, "", &error);
  if (conn < 0) return oci_fail(ctx, error);
  Reply r{};
  bool ok = read_all(conn, &r, sizeof r) && r.kind == kStarted && r.value == 0;
  close(conn);
  if (!ok) return oci_fail(ctx, "the container's kernel did not answer");
  std::string marker = oci_paused_marker(dir);
  if (freeze) close(open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  else unlink(marker.c_str());
  return 0;
}

}  // namespace flatux::launcher
