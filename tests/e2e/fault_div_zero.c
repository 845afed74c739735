// Dies by SIGFPE: an integer division by zero (#DE). Volatile operands keep
// the division in the code and out of constant folding.
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char msg[] = "dividing by zero\n";
  write(1, msg, strlen(msg));
  volatile int num = 7, den = 0;
  volatile int q = num / den;
  return q;
}
