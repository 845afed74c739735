// Pseudo-terminals: /dev/ptmx and devpts, locking, TIOCGPTN/TIOCGPTPEER,
// the line discipline between master and slave (canonical reads, echo,
// output processing, raw mode), termios and window size through the
// master, packet mode, poll, hangup, and job control with the slave as a
// session's controlling terminal (^C, SIGWINCH, /dev/tty, SIGHUP).
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static int open_master(char* name, size_t n) {
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(m >= 0, "posix_openpt: %s", strerror(errno));
  REQUIRE(grantpt(m) == 0 && unlockpt(m) == 0, "grantpt/unlockpt: %s", strerror(errno));
  REQUIRE(ptsname_r(m, name, n) == 0);
  return m;
}

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

static int revents(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

// Linux hangs a pty up asynchronously (after its buffer is flushed to the
// other side), so POLLHUP may come a moment after the close.
static int hup_within(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  for (int waited = 0; waited <= ms; waited += 10) {
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP)) return 1;
    usleep(10000);
  }
  return 0;
}

// Reads what is available now (the line discipline works synchronously,
// but give a slow machine a moment).
static int read_some(int fd, char* buf, int n) {
  struct pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, 2000) != 1) return -1;
  return (int)read(fd, buf, (size_t)n);
}

// Reads until a newline ends what arrived (the host's pty may hand over
// a line in pieces); the bytes read, or -1 if none came within 2 s.
static int read_line(int fd, char* buf, int n) {
  int got = 0;
  while (got < n) {
    int r = read_some(fd, buf + got, n - got);
    if (r <= 0) return got ? got : -1;
    got += r;
    if (buf[got - 1] == '\n') break;
  }
  return got;
}

static void basics(void) {
  printf("ptmx and devpts:\n");
  char name[64];
  int m = open_master(name, sizeof name);
  int n = -1;
  CHECK(ioctl(m, TIOCGPTN, &n) == 0 && n >= 0);
  char want[64];
  snprintf(want, sizeof want, "/dev/pts/%d", n);
  CHECK(strcmp(name, want) == 0, "ptsname %s, TIOCGPTN %d", name, n);
  struct stat st;
  CHECK(fstat(m, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 2));
  CHECK(stat(name, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 136 &&
            minor(st.st_rdev) == (unsigned)n,
        "slave node %s", name);
  CHECK(isatty(m), "the master is a terminal too");

  // A new pair is locked until unlockpt.
  int m2 = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(m2 >= 0);
  int locked = 0;
  CHECK(ioctl(m2, TIOCGPTLCK, &locked) == 0 && locked == 1);
  char name2[64];
  REQUIRE(ptsname_r(m2, name2, sizeof name2) == 0);
  CHECK_ERR(open(name2, O_RDWR | O_NOCTTY), EIO);
  CHECK_ERR(ioctl(m2, TIOCGPTPEER, O_RDWR | O_NOCTTY), EIO);
  int unlock = 0;
  CHECK(ioctl(m2, TIOCSPTLCK, &unlock) == 0);
  int peer = ioctl(m2, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  CHECK(peer >= 0 && fcntl(peer, F_GETFD) == FD_CLOEXEC, "TIOCGPTPEER: %s", strerror(errno));
  char tn[64] = "";
  CHECK(ttyname_r(peer, tn, sizeof tn) == 0 && strcmp(tn, name2) == 0, "ttyname %s", tn);
  CHECK_ERR(ioctl(peer, TIOCGPTN, &n), ENOTTY);
  close(peer);
  close(m2);
  // The master gone, its node goes too. (Natively another process may have
  // been given the same number since: the host's devpts is everyone's.)
  int again = open(name2, O_RDWR | O_NOCTTY);
  if (!under_flatux() && (again >= 0 || errno == EIO)) {  // EIO: its new owner has it locked
    printf("  %s was given to another process meanwhile\n", name2);
    if (again >= 0) close(again);
  } else {
    CHECK(again < 0 && errno == ENOENT, "open %s after its master closed: %d", name2, again);
  }

  int s = open(name, O_RDWR | O_NOCTTY);
  REQUIRE(s >= 0, "open %s: %s", name, strerror(errno));
  CHECK(isatty(s));
  CHECK(ttyname_r(s, tn, sizeof tn) == 0 && strcmp(tn, name) == 0, "ttyname %s", tn);
  struct winsize ws;
  CHECK(ioctl(s, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 0 && ws.ws_col == 0);

  printf("line discipline:\n");
  char buf[256];
  // Canonical input with echo: the slave reads whole lines, the master
  // sees the echo with CR LF.
  CHECK(write(m, "hello\n", 6) == 6);
  CHECK(read_some(s, buf, sizeof buf) == 6 && memcmp(buf, "hello\n", 6) == 0);
  int r = read_line(m, buf, sizeof buf);
  CHECK(r == 7 && memcmp(buf, "hello\r\n", 7) == 0, "echo: %d", r);
  // Erase and kill.
  CHECK(write(m, "abX\x7f" "c\n", 6) == 6);
  r = read_some(s, buf, sizeof buf);
  CHECK(r == 4 && memcmp(buf, "abc\n", 4) == 0, "after erase: %d '%.*s'", r, r > 0 ? r : 0, buf);
  // Its echo (the erase shown as "\b \b") is read out rather than flushed:
  // the host's pty may still be delivering it when a flush comes.
  r = read_line(m, buf, sizeof buf);
  CHECK(r == 9 && memcmp(buf, "abX\b \bc\r\n", 9) == 0, "echo after erase: %d", r);
  // Output processing: a slave's newline reaches the master as CR LF.
  CHECK(write(s, "out\n", 4) == 4);
  r = read_line(m, buf, sizeof buf);
  CHECK(r == 5 && memcmp(buf, "out\r\n", 5) == 0, "output: %d", r);
  int avail = -1;
  CHECK(write(s, "xyz", 3) == 3);
  struct pollfd pm = {m, POLLIN, 0};
  CHECK(poll(&pm, 1, 2000) == 1);
  CHECK(ioctl(m, FIONREAD, &avail) == 0 && avail == 3, "FIONREAD %d", avail);
  CHECK((revents(m, POLLIN | POLLOUT) & (POLLIN | POLLOUT)) == (POLLIN | POLLOUT));
  CHECK(read_some(m, buf, sizeof buf) == 3);
  CHECK(revents(m, POLLIN) == 0);
  // A partial line is not readable; EOF (^D) ends it unseen.
  CHECK(write(m, "part", 4) == 4);
  CHECK(revents(s, POLLIN) == 0);
  CHECK(write(m, "\x04", 1) == 1);
  CHECK(read_some(s, buf, sizeof buf) == 4);
  tcflush(m, TCIFLUSH);

  // Termios set through the master is the slave's: raw mode, no echo.
  struct termios t;
  REQUIRE(tcgetattr(m, &t) == 0);
  cfmakeraw(&t);
  CHECK(tcsetattr(m, TCSANOW, &t) == 0);
  struct termios t2;
  CHECK(tcgetattr(s, &t2) == 0 && !(t2.c_lflag & (ICANON | ECHO)));
  CHECK(write(m, "r\x03w", 3) == 3);
  r = read_some(s, buf, sizeof buf);
  CHECK(r == 3 && memcmp(buf, "r\x03w", 3) == 0, "raw read %d", r);
  CHECK(revents(m, POLLIN) == 0, "no echo in raw mode");
  CHECK(write(s, "a\nb", 3) == 3);
  r = read_some(m, buf, sizeof buf);
  CHECK(r == 3 && memcmp(buf, "a\nb", 3) == 0, "no output processing in raw mode");

  // Window size through the master.
  ws.ws_row = 30;
  ws.ws_col = 100;
  CHECK(ioctl(m, TIOCSWINSZ, &ws) == 0);
  memset(&ws, 0, sizeof ws);
  CHECK(ioctl(s, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 30 && ws.ws_col == 100);

  printf("packet mode:\n");
  int on = 1;
  CHECK(ioctl(m, TIOCPKT, &on) == 0);
  CHECK(write(s, "hi", 2) == 2);
  r = read_some(m, buf, sizeof buf);
  CHECK(r == 3 && buf[0] == TIOCPKT_DATA && memcmp(buf + 1, "hi", 2) == 0, "packet data %d", r);
  CHECK(tcflush(s, TCIFLUSH) == 0);
  CHECK(revents(m, POLLPRI) & POLLPRI);
  r = read_some(m, buf, sizeof buf);
  CHECK(r == 1 && buf[0] == TIOCPKT_FLUSHREAD, "status %d 0x%x", r, (unsigned char)buf[0]);
  CHECK(tcflush(s, TCOFLUSH) == 0);
  r = read_some(m, buf, sizeof buf);
  CHECK(r == 1 && buf[0] == TIOCPKT_FLUSHWRITE);
  on = 0;
  CHECK(ioctl(m, TIOCPKT, &on) == 0);

  printf("closing sides:\n");
  // The slave closes: the master reads what is left, then EIO; poll says HUP.
  CHECK(write(s, "last", 4) == 4);
  close(s);
  CHECK(hup_within(m, 2000), "no POLLHUP after the slave closed");
  r = read_some(m, buf, sizeof buf);
  CHECK(r == 4, "data before EIO: %d", r);
  CHECK_ERR(read(m, buf, sizeof buf), EIO);
  // Reopened: the master works again.
  s = open(name, O_RDWR | O_NOCTTY);
  REQUIRE(s >= 0);
  CHECK(!(revents(m, POLLIN) & POLLHUP));
  // The master closes: the slave is hung up.
  close(m);
  CHECK(read(s, buf, sizeof buf) == 0);
  CHECK_ERR(write(s, "x", 1), EIO);
  CHECK_ERR(tcgetattr(s, &t), EIO);
  CHECK((revents(s, POLLIN | POLLOUT) & (POLLHUP | POLLERR)) == (POLLHUP | POLLERR));
  CHECK_ERR(open(name, O_RDWR | O_NOCTTY), ENOENT);
  close(s);
}

// The child: a session leader whose controlling terminal is the slave.
static volatile sig_atomic_t got_int, got_winch, got_hup;
static void on_sig(int sig) {
  if (sig == SIGINT) got_int++;
  if (sig == SIGWINCH) got_winch++;
  if (sig == SIGHUP) got_hup++;
}

static int session_child(const char* slave) {
  guest_name = "pty(session)";
  REQUIRE(setsid() == getpid());
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sig;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGWINCH, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
  int s = open(slave, O_RDWR);  // a session leader's first terminal becomes its own
  REQUIRE(s >= 0);
  pid_t pg = -1, sid = -1;
  CHECK(ioctl(s, TIOCGPGRP, &pg) == 0 && pg == getpid(), "TIOCGPGRP %d", (int)pg);
  CHECK(ioctl(s, TIOCGSID, &sid) == 0 && sid == getpid());
  CHECK(tcgetsid(s) == getpid());
  // /dev/tty is the slave: the parent reads "ready" written through it.
  int tty = open("/dev/tty", O_RDWR);
  CHECK(tty >= 0, "/dev/tty: %s", strerror(errno));
  CHECK(write(tty >= 0 ? tty : s, "ready\n", 6) == 6);
  if (tty >= 0) close(tty);
  char buf[64];
  while (!got_int) usleep(1000);  // ^C typed on the master
  while (!got_winch) usleep(1000);
  CHECK(write(s, "winch\n", 6) == 6);
  while (!got_hup) usleep(1000);  // the master closes: SIGHUP to the session leader
  CHECK(read(s, buf, sizeof buf) == 0);
  CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
  return guest_finish() ? 1 : 0;
}

static int wait_for(int m, const char* word) {
  char buf[256];
  int have = 0;
  for (int i = 0; i < 500; i++) {
    int r = read_some(m, buf + have, (int)sizeof buf - 1 - have);
    if (r > 0) have += r;
    buf[have] = 0;
    if (strstr(buf, word)) return 1;
  }
  return 0;
}

static void job_control(const char* self) {
  printf("a session on the slave:\n");
  char name[64];
  int m = open_master(name, sizeof name);
  pid_t pid = vfork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl(self, self, "session", name, (char*)NULL);
    _exit(127);
  }
  CHECK(wait_for(m, "ready"), "the child started");
  CHECK(write(m, "\x03", 1) == 1);
  struct winsize ws = {40, 120, 0, 0};
  CHECK(ioctl(m, TIOCSWINSZ, &ws) == 0);
  CHECK(wait_for(m, "winch"), "the child saw SIGWINCH");
  pid_t pg = -1;
  CHECK(ioctl(m, TIOCGPGRP, &pg) == 0 && pg == pid, "foreground group %d via the master", (int)pg);
  close(m);
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
}

int main(int argc, char** argv) {
  guest_name = "pty";
  if (argc > 2 && strcmp(argv[1], "session") == 0) return session_child(argv[2]);
  basics();
  job_control(argv[0]);
  return guest_finish();
}
