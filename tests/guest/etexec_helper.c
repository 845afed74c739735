// A non-PIE program at the default link address (0x400000), for exec_busy.
#include <stdio.h>
int main(int argc, char** argv) {
  printf("etexec %s\n", argc > 1 ? argv[1] : "");
  return 23;
}
