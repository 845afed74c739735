// The program fork-execve and vfork-execve start: it only exits, so those
// rows time process creation, exec and a static binary's start-up alone.
int main(void) { return 0; }
