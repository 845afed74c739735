// Dies by SIGSEGV: a store through a null pointer. The pointer is volatile
// so the compiler can neither prove the store undefined nor drop it.
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char msg[] = "writing through a null pointer\n";
  write(1, msg, strlen(msg));
  int* volatile p = 0;
  *p = 42;
  return 0;
}
