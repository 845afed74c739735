// Pure, bounds-checked ELF64 header parsing. No I/O, no allocation: the
// loader (exec.cpp) reads bytes and maps segments; this file only decides
// whether the bytes describe a loadable x86_64 program. It is the part the
// fuzzer (tests/fuzz) hammers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux::loader {

constexpr int kMaxLoadSegments = 16;

struct ElfSegment {
  uint64_t vaddr;    // p_vaddr (unbiased)
  uint64_t memsz;    // p_memsz
  uint64_t offset;   // p_offset
  uint64_t filesz;   // p_filesz
  uint32_t prot;     // PROT_READ/WRITE/EXEC from p_flags
};

struct ElfImage {
  uint16_t type = 0;        // ET_EXEC or ET_DYN
  uint64_t entry = 0;       // e_entry (unbiased)
  uint64_t phoff = 0;       // e_phoff
  uint16_t phnum = 0;       // e_phnum
  uint16_t phentsize = 0;   // e_phentsize
  uint64_t phdr_vaddr = 0;  // where the phdrs are in memory (PT_PHDR, or the
                            // PT_LOAD that covers phoff), 0 if not loaded
  ElfSegment segs[kMaxLoadSegments]{};
  int nsegs = 0;
  uint64_t min_vaddr = 0;   // page-aligned down, over all PT_LOAD
  uint64_t max_vaddr = 0;   // page-aligned up
  bool has_interp = false;
  uint64_t interp_offset = 0, interp_size = 0;  // PT_INTERP (size incl. NUL)
  bool exec_stack = false;  // PT_GNU_STACK with PF_X
  bool has_gnu_stack = false;   // a PT_GNU_STACK was seen; without one,
                                // exec_stack = false is a default, not a choice
  bool has_phdr_vaddr = false;  // phdr_vaddr is valid (an ET_DYN with
                                // e_phoff 0 legitimately has it at 0)
};

// Step 1: the 64-byte ELF header. `file_size` is the whole file's size.
// Returns 0, or -ENOEXEC with *why set to a static English message.
int parse_elf_header(const uint8_t* data, size_t len, uint64_t file_size, ElfImage* out,
                     const char** why);
// Step 2: the program header table (phnum * phentsize bytes read from phoff).
// On success segs[0..nsegs) are sorted by vaddr with disjoint byte ranges
// (they may share a page), each has memsz > 0, filesz <= memsz, its file
// bytes inside file_size, vaddr + memsz <= 0x7ffffffff000, and vaddr and
// offset congruent mod 4096; empty PT_LOADs are dropped, as Linux skips them.
// The span max_vaddr - min_vaddr is at most 8 GiB, and an ET_EXEC starts at
// or above 0x10000. The entry point is not checked, as Linux does not.
int parse_elf_phdrs(const uint8_t* phdrs, size_t len, uint64_t file_size, ElfImage* out,
                    const char** why);
// Both steps on a buffer holding the whole file (tests and the fuzzer).
int parse_elf_blob(const uint8_t* data, size_t len, ElfImage* out, const char** why);

}  // namespace flatux::loader
