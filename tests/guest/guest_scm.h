// SCM_RIGHTS for the guest programs that pass descriptors.
#pragma once
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

// Sends `tag` with n descriptors (at most 250: musl takes control data of
// up to 1 KiB); sendmsg's result.
static int send_fds(int sock, const int* fds, int n, const char* tag, int flags) {
  char ctl[CMSG_SPACE(sizeof(int) * 250)];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {(void*)tag, strlen(tag)};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                     .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * n);
  memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  return (int)sendmsg(sock, &m, flags);
}

// Receives one message into tag (NUL-terminated) and up to `max` (at most
// 8) descriptors into fds; returns how many descriptors, -1 on error.
static int recv_fds(int sock, int* fds, int max, int flags, char* tag, size_t tagn, int* mflags) {
  char ctl[CMSG_SPACE(sizeof(int) * 8)];
  struct iovec iov = {tag, tagn - 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                     .msg_controllen = CMSG_LEN(sizeof(int) * max)};
  ssize_t r = recvmsg(sock, &m, flags);
  if (r < 0) return -1;
  tag[r] = 0;
  if (mflags) *mflags = m.msg_flags;
  int n = 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    memcpy(fds + n, CMSG_DATA(c), sizeof(int) * k);
    n += k;
  }
  return n;
}
