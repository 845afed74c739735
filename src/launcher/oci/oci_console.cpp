#include "launcher/oci/oci_console.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

bool send_master(const std::string& socket_path, int master, const char* name, std::string* error) {
  // A long path is reached through its folder's descriptor.
  std::string path = socket_path;
  int dir = -1;
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    size_t slash = path.rfind('/');
    dir = open(slash == std::string::npos ? "." : path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    path = "/proc/self/fd/" + std::to_string(dir) + path.substr(slash == std::string::npos ? 0 : slash);
  }
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  bool ok = s >= 0 && connect(s, (sockaddr*)&a, sizeof a) == 0;
  if (ok) {
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{(void*)name, strlen(name)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &master, sizeof master);
    ok = sendmsg(s, &msg, MSG_NOSIGNAL) >= 0;
  }
  if (!ok) *error = "console socket " + socket_path + ": " + strerror(errno);
  if (s >= 0) close(s);
  if (dir >= 0) close(dir);
  return ok;
}

}  // namespace

bool oci_console_open(const std::string& socket_path, unsigned rows, unsigned cols, int* slave, std::string* error) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[64];
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof name) != 0) {
    *error = std::string("making a terminal: ") + strerror(errno);
    if (master >= 0) close(master);
    return false;
  }
  int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) {
    *error = std::string(name) + ": " + strerror(errno);
    close(master);
    return false;
  }
  if (rows && cols) {
    winsize ws{(unsigned short)rows, (unsigned short)cols, 0, 0};
    ioctl(master, TIOCSWINSZ, &ws);
  }
  bool sent = send_master(socket_path, master, name, error);
  close(master);
  if (!sent) {
    close(s);
    return false;
  }
  *slave = s;
  return true;
}

}  // namespace flatux::launcher
