// Stands in for the real gate: it may call the foreign library and touch
// %fs, because it has switched FS to a host TLS block first.
extern "C" long ext2fs_open(const char* name, int flags);

long gate_open(const char* name) {
  unsigned long tls;
  asm volatile("mov %%fs:0, %0" : "=r"(tls));
  return ext2fs_open(name, 0) + (long)(tls & 1);
}
