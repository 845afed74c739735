// Dies by SIGILL: __builtin_trap() is ud2 on x86_64.
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char msg[] = "executing ud2\n";
  write(1, msg, strlen(msg));
  __builtin_trap();
}
