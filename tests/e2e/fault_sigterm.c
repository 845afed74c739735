// Dies by SIGTERM sent to itself: a signal death with no fault behind it,
// under its default action.
#include <signal.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char msg[] = "raising SIGTERM\n";
  write(1, msg, strlen(msg));
  raise(SIGTERM);
  static const char after[] = "still alive after raise(SIGTERM)\n";
  write(2, after, strlen(after));
  return 1;
}
