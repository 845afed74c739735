// The auxiliary vector: reached both through getauxval() and by walking the
// initial stack past envp, which is where the kernel writes it.
#include "guest_check.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_EXECFN
#define AT_EXECFN 31
#endif
#ifndef AT_RANDOM
#define AT_RANDOM 25
#endif
#ifndef AT_SECURE
#define AT_SECURE 23
#endif

struct found {
  int seen;
  unsigned long val;
};
static struct found raw[64];  // raw[type] for the types below 64

struct phdr_info {
  const ElfW(Phdr)* phdr;
  int phnum;
  uintptr_t bias;
  int found;
};

static int first_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct phdr_info* out = data;
  // The main program is always reported first.
  out->phdr = info->dlpi_phdr;
  out->phnum = info->dlpi_phnum;
  out->bias = info->dlpi_addr;
  out->found = 1;
  return 1;
}

// Writing through a pipe makes the kernel read the bytes: an unreadable
// range is reported as EFAULT rather than crashing this program.
static int kernel_can_read(const void* p, size_t n) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  long r = syscall(SYS_write, fds[1], p, n);
  close(fds[0]);
  close(fds[1]);
  return r == (long)n;
}

int main(int argc, char** argv, char** envp) {
  guest_name = "auxv";
  (void)argc;

  char** e = envp;
  while (*e) e++;
  ElfW(auxv_t)* av = (ElfW(auxv_t)*)(e + 1);
  int n = 0;
  for (; av[n].a_type != AT_NULL; n++) {
    REQUIRE(n < 256, "no AT_NULL within 256 auxv entries");
    unsigned long t = av[n].a_type;
    printf("  auxv[%2d] type %2lu value 0x%lx\n", n, t, (unsigned long)av[n].a_un.a_val);
    if (t < 64) {
      CHECK(!raw[t].seen, "type %lu appears twice", t);
      raw[t].seen = 1;
      raw[t].val = av[n].a_un.a_val;
    }
  }
  printf("%d auxv entries before AT_NULL\n", n);

  static const struct { unsigned long type; const char* name; } required[] = {
      {AT_PHDR, "AT_PHDR"},   {AT_PHENT, "AT_PHENT"}, {AT_PHNUM, "AT_PHNUM"},
      {AT_PAGESZ, "AT_PAGESZ"}, {AT_ENTRY, "AT_ENTRY"}, {AT_UID, "AT_UID"},
      {AT_EUID, "AT_EUID"},   {AT_GID, "AT_GID"},     {AT_EGID, "AT_EGID"},
      {AT_RANDOM, "AT_RANDOM"}, {AT_EXECFN, "AT_EXECFN"}, {AT_SECURE, "AT_SECURE"},
      {AT_HWCAP, "AT_HWCAP"}, {AT_CLKTCK, "AT_CLKTCK"},
  };
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
    unsigned long t = required[i].type;
    CHECK(raw[t].seen, "%s missing from the auxiliary vector", required[i].name);
    // glibc reports its own idea of AT_HWCAP.
    if (raw[t].seen && t != AT_HWCAP)
      CHECK(getauxval(t) == raw[t].val, "getauxval(%s)=0x%lx but the stack says 0x%lx",
            required[i].name, getauxval(t), raw[t].val);
  }

  CHECK(getauxval(AT_PAGESZ) == 4096, "AT_PAGESZ=%lu", getauxval(AT_PAGESZ));
  CHECK(getauxval(AT_PHENT) == sizeof(ElfW(Phdr)), "AT_PHENT=%lu", getauxval(AT_PHENT));
  CHECK(getauxval(AT_ENTRY) != 0, "AT_ENTRY is 0");
  CHECK(getauxval(AT_CLKTCK) > 0, "AT_CLKTCK is 0");
  CHECK(getauxval(AT_SECURE) == 0, "AT_SECURE=%lu for a plain program", getauxval(AT_SECURE));
  CHECK(getauxval(AT_UID) == getuid(), "AT_UID=%lu getuid()=%u", getauxval(AT_UID), getuid());
  CHECK(getauxval(AT_EUID) == geteuid(), "AT_EUID=%lu geteuid()=%u", getauxval(AT_EUID), geteuid());
  CHECK(getauxval(AT_GID) == getgid(), "AT_GID=%lu getgid()=%u", getauxval(AT_GID), getgid());
  CHECK(getauxval(AT_EGID) == getegid(), "AT_EGID=%lu getegid()=%u", getauxval(AT_EGID), getegid());
  printf("AT_PAGESZ, AT_PHENT, AT_ENTRY, AT_CLKTCK, AT_SECURE, AT_[E]UID/[E]GID ok\n");

  // AT_RANDOM: 16 bytes the kernel can read, not all zero.
  const unsigned char* rnd = (const unsigned char*)getauxval(AT_RANDOM);
  REQUIRE(rnd != NULL, "AT_RANDOM is NULL");
  REQUIRE(kernel_can_read(rnd, 16) == 1, "AT_RANDOM=%p: 16 bytes not readable", (void*)rnd);
  int nonzero = 0;
  printf("AT_RANDOM=%p:", (void*)rnd);
  for (int i = 0; i < 16; i++) {
    printf(" %02x", rnd[i]);
    nonzero |= rnd[i];
  }
  printf("\n");
  CHECK(nonzero, "AT_RANDOM bytes are all zero");

  // AT_EXECFN names the file that was executed: here argv[0].
  const char* execfn = (const char*)getauxval(AT_EXECFN);
  REQUIRE(execfn != NULL, "AT_EXECFN is NULL");
  printf("AT_EXECFN=\"%s\" argv[0]=\"%s\"\n", execfn, argv[0]);
  if (strcmp(execfn, argv[0]) != 0) {
    struct stat a, b;
    CHECK(stat(execfn, &a) == 0 && stat(argv[0], &b) == 0 && a.st_dev == b.st_dev &&
              a.st_ino == b.st_ino,
          "AT_EXECFN=\"%s\" is neither argv[0]=\"%s\" nor the same file", execfn, argv[0]);
  }

  // AT_PHDR/AT_PHNUM describe this program's loaded image.
  const ElfW(Phdr)* phdr = (const ElfW(Phdr)*)getauxval(AT_PHDR);
  int phnum = (int)getauxval(AT_PHNUM);
  REQUIRE(phdr && phnum > 0, "AT_PHDR=%p AT_PHNUM=%d", (void*)phdr, phnum);
  REQUIRE(kernel_can_read(phdr, (size_t)phnum * sizeof *phdr) == 1,
          "AT_PHDR=%p: %d headers not readable", (void*)phdr, phnum);

  struct phdr_info dl = {0};
  dl_iterate_phdr(first_object, &dl);
  REQUIRE(dl.found, "dl_iterate_phdr reported nothing");
  printf("AT_PHDR=%p AT_PHNUM=%d, dl_iterate_phdr: phdr=%p phnum=%d bias=0x%lx\n",
         (void*)phdr, phnum, (void*)dl.phdr, dl.phnum, (unsigned long)dl.bias);
  CHECK(dl.phdr == phdr, "dl_iterate_phdr's main program phdr=%p, AT_PHDR=%p",
        (void*)dl.phdr, (void*)phdr);
  CHECK(dl.phnum == phnum, "dl_iterate_phdr's phnum=%d, AT_PHNUM=%d", dl.phnum, phnum);

  // The load bias, derived independently: PT_PHDR records where the headers
  // sit relative to the link address; without it, the first PT_LOAD with
  // offset 0 maps the ELF header, which the headers follow at e_phoff.
  uintptr_t bias = 0;
  int have_bias = 0;
  for (int i = 0; i < phnum; i++)
    if (phdr[i].p_type == PT_PHDR) {
      bias = (uintptr_t)phdr - phdr[i].p_vaddr;
      have_bias = 1;
    }
  const ElfW(Ehdr)* eh = NULL;
  for (int i = 0; i < phnum; i++)
    if (phdr[i].p_type == PT_LOAD && phdr[i].p_offset == 0) {
      if (!have_bias) {
        // Headers sit at file offset e_phoff == 64 in every ld output.
        bias = (uintptr_t)phdr - sizeof(ElfW(Ehdr)) - phdr[i].p_vaddr;
        have_bias = 1;
      }
      eh = (const ElfW(Ehdr)*)(bias + phdr[i].p_vaddr);
      break;
    }
  REQUIRE(have_bias && eh, "cannot locate the ELF header of the loaded image");
  CHECK(bias == dl.bias, "load bias 0x%lx, dl_iterate_phdr says 0x%lx", (unsigned long)bias,
        (unsigned long)dl.bias);
  REQUIRE(kernel_can_read(eh, sizeof *eh) == 1, "ELF header at %p not readable", (void*)eh);
  CHECK(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0, "no ELF magic at %p", (void*)eh);
  CHECK(eh->e_phnum == phnum, "e_phnum=%d, AT_PHNUM=%d", eh->e_phnum, phnum);
  CHECK((const char*)eh + eh->e_phoff == (const char*)phdr, "ELF header at %p with e_phoff %lu"
        " does not lead to AT_PHDR=%p", (void*)eh, (unsigned long)eh->e_phoff, (void*)phdr);
  CHECK(bias + eh->e_entry == getauxval(AT_ENTRY), "bias+e_entry=0x%lx, AT_ENTRY=0x%lx",
        (unsigned long)(bias + eh->e_entry), getauxval(AT_ENTRY));

  // A PT_LOAD that is executable must cover main and the entry point.
  uintptr_t main_addr = (uintptr_t)&main;
  int covers_main = 0, covers_entry = 0;
  for (int i = 0; i < phnum; i++) {
    if (phdr[i].p_type != PT_LOAD || !(phdr[i].p_flags & PF_X)) continue;
    uintptr_t lo = bias + phdr[i].p_vaddr, hi = lo + phdr[i].p_memsz;
    if (main_addr >= lo && main_addr < hi) covers_main = 1;
    if (getauxval(AT_ENTRY) >= lo && getauxval(AT_ENTRY) < hi) covers_entry = 1;
  }
  CHECK(covers_main, "no executable PT_LOAD covers main=%p", (void*)main_addr);
  CHECK(covers_entry, "no executable PT_LOAD covers AT_ENTRY");
  printf("AT_PHDR/AT_PHNUM/AT_ENTRY match the loaded image (bias 0x%lx)\n", (unsigned long)bias);

  // AT_PLATFORM, when given, names the machine.
  const char* plat = (const char*)getauxval(AT_PLATFORM);
  if (plat) {
    printf("AT_PLATFORM=\"%s\"\n", plat);
    CHECK(strcmp(plat, "x86_64") == 0, "AT_PLATFORM=\"%s\"", plat);
  }
  return guest_finish();
}
