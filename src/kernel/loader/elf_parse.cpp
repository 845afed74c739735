// Every field read here comes from an untrusted file, so every sum is checked
// for overflow before it is compared, and every struct is memcpy'd out of the
// buffer because nothing guarantees the buffer or e_phoff is aligned.
#include "kernel/loader/elf_parse.h"

#include <elf.h>
#include <linux/errno.h>
#include <sys/mman.h>

#include <cstring>

namespace flatux::loader {
namespace {

constexpr uint64_t kPage = 4096;
// The top of the 47-bit user half, less the guard page Linux keeps below it.
constexpr uint64_t kUserTop = 0x7ffffffff000ULL;
// No real program spans more than this; a larger span is a corrupt or
// hostile p_memsz, and reserving it would exhaust the host's address space.
constexpr uint64_t kMaxSpan = 8ULL << 30;
// Linux's default vm.mmap_min_addr: a fixed-address image below it could not
// be mapped, and page zero must stay unmapped so NULL dereferences fault.
constexpr uint64_t kMinExecVaddr = 0x10000;
constexpr uint16_t kMaxPhnum = 256;
constexpr uint64_t kMaxPhdrBytes = 64 * 1024;
// PATH_MAX, as Linux bounds PT_INTERP.
constexpr uint64_t kMaxInterp = 4096;

int reject(const char** why, const char* msg) {
  if (why) *why = msg;
  return -ENOEXEC;
}

constexpr uint64_t page_down(uint64_t v) { return v & ~(kPage - 1); }
// Only called on values <= kUserTop, so it cannot wrap.
constexpr uint64_t page_up(uint64_t v) { return (v + kPage - 1) & ~(kPage - 1); }

// [off, off+size) lies inside a file of file_size bytes, without computing a
// sum that could wrap.
constexpr bool in_file(uint64_t off, uint64_t size, uint64_t file_size) {
  return off <= file_size && size <= file_size - off;
}

uint32_t prot_from_flags(uint32_t flags) {
  uint32_t prot = 0;
  if (flags & PF_R) prot |= PROT_READ;
  if (flags & PF_W) prot |= PROT_WRITE;
  if (flags & PF_X) prot |= PROT_EXEC;
  return prot;
}

}  // namespace

int parse_elf_header(const uint8_t* data, size_t len, uint64_t file_size, ElfImage* out,
                     const char** why) {
  if (out == nullptr) return -EINVAL;
  *out = ElfImage{};
  if (data == nullptr || len < sizeof(Elf64_Ehdr) || file_size < sizeof(Elf64_Ehdr))
    return reject(why, "truncated ELF header");

  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return reject(why, "not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return reject(why, "not a 64-bit ELF");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return reject(why, "not a little-endian ELF");
  if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
    return reject(why, "unsupported ELF version");
  if (eh.e_machine != EM_X86_64) return reject(why, "not an x86_64 ELF");
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
    return reject(why, "not an executable or shared object");
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) return reject(why, "bad e_phentsize");
  if (eh.e_phnum == 0) return reject(why, "no program headers");
  // Also catches PN_XNUM (0xffff), whose real count would live in section 0:
  // no executable needs that many.
  if (eh.e_phnum > kMaxPhnum) return reject(why, "too many program headers");
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * eh.e_phentsize;
  if (ph_bytes > kMaxPhdrBytes) return reject(why, "too many program headers");
  if (!in_file(eh.e_phoff, ph_bytes, file_size))
    return reject(why, "program headers beyond end of file");

  out->type = eh.e_type;
  out->entry = eh.e_entry;
  out->phoff = eh.e_phoff;
  out->phnum = eh.e_phnum;
  out->phentsize = eh.e_phentsize;
  return 0;
}

int parse_elf_phdrs(const uint8_t* phdrs, size_t len, uint64_t file_size, ElfImage* out,
                    const char** why) {
  if (out == nullptr) return -EINVAL;
  // Step 1 may have failed or never run; do not trust phnum/phentsize blindly.
  if (out->phentsize != sizeof(Elf64_Phdr) || out->phnum == 0 || out->phnum > kMaxPhnum)
    return reject(why, "ELF header not validated");
  const uint64_t ph_bytes = uint64_t{out->phnum} * sizeof(Elf64_Phdr);
  if (phdrs == nullptr || len < ph_bytes) return reject(why, "truncated program headers");

  // A reused ElfImage must not keep segments from an earlier file.
  for (auto& s : out->segs) s = ElfSegment{};
  out->nsegs = 0;
  out->min_vaddr = out->max_vaddr = 0;
  out->phdr_vaddr = 0;
  out->has_phdr_vaddr = false;
  out->has_interp = false;
  out->interp_offset = out->interp_size = 0;
  out->exec_stack = out->has_gnu_stack = false;

  bool have_pt_phdr = false;
  uint64_t pt_phdr_vaddr = 0;

  for (uint16_t i = 0; i < out->phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, phdrs + uint64_t{i} * sizeof(Elf64_Phdr), sizeof ph);
    switch (ph.p_type) {
      case PT_LOAD: {
        if (ph.p_filesz > ph.p_memsz) return reject(why, "p_filesz larger than p_memsz");
        if (!in_file(ph.p_offset, ph.p_filesz, file_size))
          return reject(why, "segment beyond end of file");
        if (ph.p_memsz > kMaxSpan) return reject(why, "segment too large");
        if (ph.p_vaddr > kUserTop || ph.p_memsz > kUserTop - ph.p_vaddr)
          return reject(why, "segment beyond user address space");
        // mmap needs a page-aligned file offset for the page holding p_vaddr;
        // the wrap-around of the unsigned difference is harmless mod 4096.
        if ((ph.p_vaddr - ph.p_offset) % kPage != 0)
          return reject(why, "misaligned PT_LOAD segment");
        // Linux maps nothing for an empty segment; keeping it would only
        // confuse the ordering checks.
        if (ph.p_memsz == 0) break;
        if (out->nsegs == kMaxLoadSegments) return reject(why, "too many PT_LOAD segments");
        if (out->nsegs > 0) {
          const ElfSegment& prev = out->segs[out->nsegs - 1];
          if (ph.p_vaddr < prev.vaddr)
            return reject(why, "PT_LOAD segments not in address order");
          // Byte ranges must be disjoint; sharing a page is normal (text's
          // tail and data's head), and the loader resolves that page.
          if (ph.p_vaddr < prev.vaddr + prev.memsz)
            return reject(why, "overlapping PT_LOAD segments");
        }
        out->segs[out->nsegs++] = ElfSegment{
            .vaddr = ph.p_vaddr,
            .memsz = ph.p_memsz,
            .offset = ph.p_offset,
            .filesz = ph.p_filesz,
            .prot = prot_from_flags(ph.p_flags),
        };
        break;
      }
      case PT_INTERP:
        if (out->has_interp) return reject(why, "multiple PT_INTERP");
        // At least one character and its NUL; NUL termination itself is
        // checked by whoever reads the string.
        if (ph.p_filesz < 2 || ph.p_filesz > kMaxInterp ||
            !in_file(ph.p_offset, ph.p_filesz, file_size))
          return reject(why, "bad PT_INTERP");
        out->has_interp = true;
        out->interp_offset = ph.p_offset;
        out->interp_size = ph.p_filesz;
        break;
      case PT_PHDR:
        if (!have_pt_phdr) {
          have_pt_phdr = true;
          pt_phdr_vaddr = ph.p_vaddr;
        }
        break;
      case PT_GNU_STACK:
        out->has_gnu_stack = true;
        out->exec_stack = (ph.p_flags & PF_X) != 0;
        break;
      default:
        break;
    }
  }

  if (out->nsegs == 0) return reject(why, "no PT_LOAD segment");

  // Sorted and disjoint, so the last segment ends highest.
  const ElfSegment& first = out->segs[0];
  const ElfSegment& last = out->segs[out->nsegs - 1];
  const uint64_t lo = page_down(first.vaddr);
  const uint64_t hi = page_up(last.vaddr + last.memsz);
  if (hi - lo > kMaxSpan) return reject(why, "PT_LOAD span too large");
  if (out->type == ET_EXEC && lo < kMinExecVaddr)
    return reject(why, "ET_EXEC segment below 64 KiB");
  out->min_vaddr = lo;
  out->max_vaddr = hi;

  if (have_pt_phdr) {
    out->phdr_vaddr = pt_phdr_vaddr;
    out->has_phdr_vaddr = true;
  } else {
    // What Linux reports as AT_PHDR without a PT_PHDR: the address at which
    // the segment that maps the table's file bytes puts them.
    for (int i = 0; i < out->nsegs; i++) {
      const ElfSegment& s = out->segs[i];
      if (out->phoff >= s.offset && out->phoff - s.offset <= s.filesz &&
          ph_bytes <= s.filesz - (out->phoff - s.offset)) {
        out->phdr_vaddr = s.vaddr + (out->phoff - s.offset);
        out->has_phdr_vaddr = true;
        break;
      }
    }
  }
  return 0;
}

int parse_elf_blob(const uint8_t* data, size_t len, ElfImage* out, const char** why) {
  int rc = parse_elf_header(data, len, len, out, why);
  if (rc != 0) return rc;
  // parse_elf_header checked phoff + phnum * phentsize <= len.
  return parse_elf_phdrs(data + out->phoff, len - out->phoff, len, out, why);
}

}  // namespace flatux::loader
