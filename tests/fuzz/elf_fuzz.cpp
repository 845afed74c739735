// libFuzzer target for the ELF parser. Besides letting ASan/UBSan catch
// out-of-bounds reads and overflow, it checks on every accepted input the
// promises the loader relies on, so a check that is too weak shows up as a
// crash rather than as a bad mapping much later.
#include <elf.h>
#include <linux/errno.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernel/loader/elf_parse.h"

namespace {

using flatux::loader::ElfImage;

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_accepted(const ElfImage& im, size_t size) {
  constexpr uint64_t kPage = 4096, kUserTop = 0x7ffffffff000ULL;
  require(im.type == ET_EXEC || im.type == ET_DYN);
  require(im.phentsize == sizeof(Elf64_Phdr) && im.phnum > 0 && im.phnum <= 256);
  require(im.phoff <= size && uint64_t{im.phnum} * im.phentsize <= size - im.phoff);
  require(im.nsegs >= 1 && im.nsegs <= flatux::loader::kMaxLoadSegments);
  for (int i = 0; i < im.nsegs; i++) {
    const auto& s = im.segs[i];
    require(s.memsz > 0 && s.filesz <= s.memsz);
    require(s.offset <= size && s.filesz <= size - s.offset);
    require(s.vaddr <= kUserTop && s.memsz <= kUserTop - s.vaddr);
    require((s.vaddr - s.offset) % kPage == 0);
    require((s.prot & ~uint32_t{PROT_READ | PROT_WRITE | PROT_EXEC}) == 0);
    if (i > 0) require(s.vaddr >= im.segs[i - 1].vaddr + im.segs[i - 1].memsz);
  }
  const auto& last = im.segs[im.nsegs - 1];
  require(im.min_vaddr % kPage == 0 && im.max_vaddr % kPage == 0);
  require(im.min_vaddr <= im.segs[0].vaddr && im.max_vaddr >= last.vaddr + last.memsz);
  require(im.max_vaddr - im.min_vaddr <= (uint64_t{8} << 30));
  require(im.max_vaddr <= kUserTop);
  if (im.type == ET_EXEC) require(im.min_vaddr >= 0x10000);
  if (im.has_interp) {
    require(im.interp_size >= 2 && im.interp_size <= 4096);
    require(im.interp_offset <= size && im.interp_size <= size - im.interp_offset);
  }
  if (!im.has_phdr_vaddr) require(im.phdr_vaddr == 0);
  if (!im.has_gnu_stack) require(!im.exec_stack);
}

bool same(const ElfImage& a, const ElfImage& b) {
  if (a.type != b.type || a.entry != b.entry || a.phoff != b.phoff || a.phnum != b.phnum ||
      a.phentsize != b.phentsize || a.phdr_vaddr != b.phdr_vaddr || a.nsegs != b.nsegs ||
      a.min_vaddr != b.min_vaddr || a.max_vaddr != b.max_vaddr ||
      a.has_interp != b.has_interp || a.interp_offset != b.interp_offset ||
      a.interp_size != b.interp_size || a.exec_stack != b.exec_stack ||
      a.has_gnu_stack != b.has_gnu_stack || a.has_phdr_vaddr != b.has_phdr_vaddr)
    return false;
  for (int i = 0; i < a.nsegs; i++) {
    const auto &x = a.segs[i], &y = b.segs[i];
    if (x.vaddr != y.vaddr || x.memsz != y.memsz || x.offset != y.offset ||
        x.filesz != y.filesz || x.prot != y.prot)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flatux::loader;
  static ElfImage blob, staged;  // too big to want on the stack every run

  const char* why = nullptr;
  int rc = parse_elf_blob(data, size, &blob, &why);
  if (rc == 0) {
    check_accepted(blob, size);
  } else {
    require(rc == -ENOEXEC && why != nullptr && why[0] != '\0');
  }

  // The loader's path: the header from a short read, then the table from a
  // separate buffer, exactly sized so ASan sees any overread.
  const char* why2 = nullptr;
  int rc2 = parse_elf_header(data, std::min<size_t>(size, sizeof(Elf64_Ehdr)), size, &staged,
                             &why2);
  if (rc2 == 0) {
    const size_t n = size_t{staged.phnum} * staged.phentsize;
    uint8_t* table = new uint8_t[n];
    std::memcpy(table, data + staged.phoff, n);
    rc2 = parse_elf_phdrs(table, n, size, &staged, &why2);
    delete[] table;
  }
  require(rc == rc2);
  if (rc == 0) {
    require(same(blob, staged));
  } else {
    require(std::strcmp(why, why2) == 0);
  }
  return 0;
}
