// Dies by SIGABRT through abort(), which the libc turns into signal calls
// to the own process rather than a hardware fault.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char msg[] = "calling abort()\n";
  write(1, msg, strlen(msg));
  abort();
}
