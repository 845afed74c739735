// Hand-built ELF images, valid and malformed, shared by the unit tests, the
// corpus generator and the corpus checker, so that the three agree on which
// bytes must be rejected and with which message. Hosted code (tests only).
#pragma once

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace flatux::elfcorpus {

using Bytes = std::vector<uint8_t>;

struct Case {
  std::string name;
  Bytes bytes;
  // The parser's message for this rejection; nullptr when it must be accepted.
  const char* why;
};

inline Elf64_Ehdr get_ehdr(const Bytes& b) {
  Elf64_Ehdr eh{};
  std::memcpy(&eh, b.data(), std::min(b.size(), sizeof eh));
  return eh;
}

inline void put_ehdr(Bytes& b, const Elf64_Ehdr& eh) {
  std::memcpy(b.data(), &eh, sizeof eh);
}

inline Elf64_Phdr get_phdr(const Bytes& b, int i) {
  Elf64_Phdr ph{};
  std::memcpy(&ph, b.data() + get_ehdr(b).e_phoff + i * sizeof ph, sizeof ph);
  return ph;
}

inline void put_phdr(Bytes& b, int i, const Elf64_Phdr& ph) {
  std::memcpy(b.data() + get_ehdr(b).e_phoff + i * sizeof ph, &ph, sizeof ph);
}

template <typename F>
Bytes with_phdr(Bytes b, int i, F&& edit) {
  Elf64_Phdr ph = get_phdr(b, i);
  edit(ph);
  put_phdr(b, i, ph);
  return b;
}

template <typename F>
Bytes with_ehdr(Bytes b, F&& edit) {
  Elf64_Ehdr eh = get_ehdr(b);
  edit(eh);
  put_ehdr(b, eh);
  return b;
}

inline Elf64_Phdr phdr(uint32_t type, uint32_t flags, uint64_t off, uint64_t vaddr,
                       uint64_t filesz, uint64_t memsz, uint64_t align = 0x1000) {
  return Elf64_Phdr{.p_type = type, .p_flags = flags, .p_offset = off, .p_vaddr = vaddr,
                    .p_paddr = vaddr, .p_filesz = filesz, .p_memsz = memsz, .p_align = align};
}

// An ELF header followed at offset 64 by `phdrs`, zero-padded to file_size.
inline Bytes make_elf(uint16_t type, uint64_t entry, const std::vector<Elf64_Phdr>& phdrs,
                      size_t file_size) {
  Bytes b(std::max(file_size, sizeof(Elf64_Ehdr) + phdrs.size() * sizeof(Elf64_Phdr)));
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = type;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = entry;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(phdrs.size());
  put_ehdr(b, eh);
  for (size_t i = 0; i < phdrs.size(); i++) put_phdr(b, static_cast<int>(i), phdrs[i]);
  return b;
}

inline constexpr char kInterpPath[] = "/lib64/ld-linux-x86-64.so.2";

// Indices of the program headers in exec_base().
enum ExecPhdr { kPhPhdr = 0, kPhInterp = 1, kPhText = 2, kPhData = 3, kPhStack = 4 };
inline constexpr uint64_t kExecBase = 0x400000;
inline constexpr uint64_t kInterpOff = 0x160;
inline constexpr uint64_t kDataOff = 0x200;

// A dynamically linked ET_EXEC the shape ld emits: PT_PHDR, PT_INTERP, text at
// 0x400000 covering the headers, data with a bss tail, PT_GNU_STACK.
inline Bytes exec_base() {
  const uint64_t ph_bytes = 5 * sizeof(Elf64_Phdr);
  Bytes b = make_elf(ET_EXEC, kExecBase + 0x180,
                     {
                         phdr(PT_PHDR, PF_R, 64, kExecBase + 64, ph_bytes, ph_bytes, 8),
                         phdr(PT_INTERP, PF_R, kInterpOff, kExecBase + kInterpOff,
                              sizeof kInterpPath, sizeof kInterpPath, 1),
                         phdr(PT_LOAD, PF_R | PF_X, 0, kExecBase, kDataOff, kDataOff),
                         phdr(PT_LOAD, PF_R | PF_W, kDataOff, kExecBase + 0x1000 + kDataOff,
                              0x40, 0x1000),
                         phdr(PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 16),
                     },
                     kDataOff + 0x40);
  std::memcpy(b.data() + kInterpOff, kInterpPath, sizeof kInterpPath);
  return b;
}

// A static-pie-like ET_DYN linked at 0, without PT_PHDR or PT_INTERP.
inline Bytes dyn_base() {
  return make_elf(ET_DYN, 0x100,
                  {
                      phdr(PT_LOAD, PF_R | PF_X, 0, 0, 0x180, 0x180),
                      phdr(PT_LOAD, PF_R | PF_W, 0x180, 0x1180, 0x20, 0x800),
                      phdr(PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 16),
                  },
                  0x1a0);
}

inline std::vector<Case> valid_cases() {
  std::vector<Case> v;
  v.push_back({"ok-exec", exec_base(), nullptr});
  v.push_back({"ok-dyn", dyn_base(), nullptr});
  // Data starting in the page where text ends, as in most real binaries.
  v.push_back({"ok-shared-page", with_phdr(exec_base(), kPhData, [](Elf64_Phdr& p) {
                 p.p_vaddr = kExecBase + kDataOff;
               }), nullptr});
  v.push_back({"ok-exec-stack", with_phdr(exec_base(), kPhStack, [](Elf64_Phdr& p) {
                 p.p_flags |= PF_X;
               }), nullptr});
  v.push_back({"ok-no-pt-phdr", with_phdr(exec_base(), kPhPhdr, [](Elf64_Phdr& p) {
                 p.p_type = PT_NOTE;
               }), nullptr});
  // Linux skips a PT_LOAD with nothing to map; so must we.
  v.push_back({"ok-empty-load", with_phdr(exec_base(), kPhStack, [](Elf64_Phdr& p) {
                 p = phdr(PT_LOAD, PF_R, 0, 0, 0, 0);
               }), nullptr});
  // Nothing in the file says the entry point is mapped; Linux does not check.
  v.push_back({"ok-entry-outside", with_ehdr(exec_base(), [](Elf64_Ehdr& e) {
                 e.e_entry = 0xdead0000;
               }), nullptr});
  return v;
}

inline std::vector<Case> malformed_cases() {
  std::vector<Case> v;
  const Bytes exec = exec_base();
  auto ehdr_case = [&](const char* name, const char* why, auto edit) {
    v.push_back({name, with_ehdr(exec, edit), why});
  };
  auto phdr_case = [&](const char* name, int i, const char* why, auto edit) {
    v.push_back({name, with_phdr(exec, i, edit), why});
  };

  v.push_back({"bad-empty-file", Bytes{}, "truncated ELF header"});
  v.push_back({"bad-truncated-header", Bytes(exec.begin(), exec.begin() + 40),
               "truncated ELF header"});
  ehdr_case("bad-magic", "not an ELF file", [](Elf64_Ehdr& e) { e.e_ident[EI_MAG1] = 'B'; });
  ehdr_case("bad-class-32", "not a 64-bit ELF",
            [](Elf64_Ehdr& e) { e.e_ident[EI_CLASS] = ELFCLASS32; });
  ehdr_case("bad-big-endian", "not a little-endian ELF",
            [](Elf64_Ehdr& e) { e.e_ident[EI_DATA] = ELFDATA2MSB; });
  ehdr_case("bad-ident-version", "unsupported ELF version",
            [](Elf64_Ehdr& e) { e.e_ident[EI_VERSION] = 2; });
  ehdr_case("bad-e-version", "unsupported ELF version", [](Elf64_Ehdr& e) { e.e_version = 0; });
  ehdr_case("bad-machine-i386", "not an x86_64 ELF", [](Elf64_Ehdr& e) { e.e_machine = EM_386; });
  ehdr_case("bad-machine-aarch64", "not an x86_64 ELF",
            [](Elf64_Ehdr& e) { e.e_machine = EM_AARCH64; });
  ehdr_case("bad-type-rel", "not an executable or shared object",
            [](Elf64_Ehdr& e) { e.e_type = ET_REL; });
  ehdr_case("bad-type-core", "not an executable or shared object",
            [](Elf64_Ehdr& e) { e.e_type = ET_CORE; });
  ehdr_case("bad-phentsize", "bad e_phentsize", [](Elf64_Ehdr& e) { e.e_phentsize = 32; });
  ehdr_case("bad-no-phdrs", "no program headers", [](Elf64_Ehdr& e) { e.e_phnum = 0; });
  ehdr_case("bad-too-many-phdrs", "too many program headers",
            [](Elf64_Ehdr& e) { e.e_phnum = 257; });
  ehdr_case("bad-phnum-xnum", "too many program headers",
            [](Elf64_Ehdr& e) { e.e_phnum = PN_XNUM; });
  ehdr_case("bad-phoff-beyond-file", "program headers beyond end of file",
            [&](Elf64_Ehdr& e) { e.e_phoff = exec.size() - 10; });
  ehdr_case("bad-phoff-overflow", "program headers beyond end of file",
            [](Elf64_Ehdr& e) { e.e_phoff = ~uint64_t{0} - 63; });
  v.push_back({"bad-truncated-phdrs", Bytes(exec.begin(), exec.begin() + 64 + 2 * 56),
               "program headers beyond end of file"});

  phdr_case("bad-filesz-gt-memsz", kPhData, "p_filesz larger than p_memsz",
            [](Elf64_Phdr& p) { p.p_memsz = p.p_filesz - 1; });
  phdr_case("bad-offset-beyond-file", kPhData, "segment beyond end of file",
            [](Elf64_Phdr& p) { p.p_offset += 0x10000; });
  phdr_case("bad-filesz-beyond-file", kPhData, "segment beyond end of file",
            [](Elf64_Phdr& p) { p.p_filesz = p.p_memsz = 0x10000; });
  phdr_case("bad-offset-overflow", kPhData, "segment beyond end of file",
            [](Elf64_Phdr& p) { p.p_offset = ~uint64_t{0} - 0xfff + kDataOff; });
  phdr_case("bad-huge-memsz", kPhData, "segment too large",
            [](Elf64_Phdr& p) { p.p_memsz = uint64_t{1} << 40; });
  phdr_case("bad-memsz-wraps", kPhData, "segment too large",
            [](Elf64_Phdr& p) { p.p_memsz = ~uint64_t{0} - 0xfff; });
  phdr_case("bad-vaddr-wraps", kPhData, "segment beyond user address space",
            [](Elf64_Phdr& p) { p.p_vaddr = ~uint64_t{0} - 0xfff + kDataOff; });
  phdr_case("bad-above-user-space", kPhData, "segment beyond user address space",
            [](Elf64_Phdr& p) { p.p_vaddr = 0x7ffffffff000 + kDataOff - 0x1000; });
  phdr_case("bad-span-too-large", kPhData, "PT_LOAD span too large",
            [](Elf64_Phdr& p) { p.p_vaddr += uint64_t{9} << 30; });
  phdr_case("bad-overlapping-load", kPhText, "overlapping PT_LOAD segments",
            [](Elf64_Phdr& p) { p.p_memsz = 0x1000 + kDataOff + 1; });
  {
    Bytes b = exec;
    Elf64_Phdr text = get_phdr(b, kPhText), data = get_phdr(b, kPhData);
    put_phdr(b, kPhText, data);
    put_phdr(b, kPhData, text);
    v.push_back({"bad-unsorted-load", b, "PT_LOAD segments not in address order"});
  }
  phdr_case("bad-misaligned-load", kPhData, "misaligned PT_LOAD segment",
            [](Elf64_Phdr& p) { p.p_vaddr += 0x100; });
  {
    Bytes b = with_phdr(exec, kPhText, [](Elf64_Phdr& p) { p.p_type = PT_NOTE; });
    v.push_back({"bad-no-load", with_phdr(b, kPhData, [](Elf64_Phdr& p) {
                   p.p_type = PT_NOTE;
                 }), "no PT_LOAD segment"});
  }
  {
    std::vector<Elf64_Phdr> loads;
    for (int i = 0; i < 17; i++)
      loads.push_back(phdr(PT_LOAD, PF_R, 0, kExecBase + i * 0x1000, 0x10, 0x10));
    v.push_back({"bad-too-many-loads", make_elf(ET_EXEC, kExecBase, loads, 0x1000),
                 "too many PT_LOAD segments"});
  }
  {
    Bytes b = with_phdr(exec, kPhText, [](Elf64_Phdr& p) { p.p_vaddr = 0x1000; });
    v.push_back({"bad-exec-page-zero", with_phdr(b, kPhData, [](Elf64_Phdr& p) {
                   p.p_vaddr = 0x2000 + kDataOff;
                 }), "ET_EXEC segment below 64 KiB"});
  }
  phdr_case("bad-interp-empty", kPhInterp, "bad PT_INTERP",
            [](Elf64_Phdr& p) { p.p_filesz = 0; });
  phdr_case("bad-interp-just-nul", kPhInterp, "bad PT_INTERP",
            [](Elf64_Phdr& p) { p.p_filesz = 1; });
  phdr_case("bad-interp-too-long", kPhInterp, "bad PT_INTERP",
            [](Elf64_Phdr& p) { p.p_filesz = 4097; });
  phdr_case("bad-interp-beyond-file", kPhInterp, "bad PT_INTERP",
            [](Elf64_Phdr& p) { p.p_offset = 0x1000; });
  phdr_case("bad-interp-offset-overflow", kPhInterp, "bad PT_INTERP",
            [](Elf64_Phdr& p) { p.p_offset = ~uint64_t{0} - 4; });
  phdr_case("bad-two-interp", kPhStack, "multiple PT_INTERP",
            [](Elf64_Phdr& p) { p = phdr(PT_INTERP, PF_R, kInterpOff, 0, 28, 28, 1); });
  return v;
}

inline std::optional<Bytes> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A small valid ELF keeping a real binary's headers: the file is cut just past
// its program headers and PT_INTERP, and each PT_LOAD is re-pointed at the
// lowest offset congruent to its p_vaddr, with p_filesz clamped to what is
// left. Real-world header layouts (PT_PHDR, GNU_RELRO, notes...) stay intact
// while the seed stays a few KiB, which keeps fuzzing fast.
inline std::optional<Bytes> header_seed(const Bytes& real) {
  if (real.size() < sizeof(Elf64_Ehdr)) return std::nullopt;
  const Elf64_Ehdr eh = get_ehdr(real);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) return std::nullopt;
  uint64_t end = eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (end > real.size()) return std::nullopt;
  for (int i = 0; i < eh.e_phnum; i++) {
    const Elf64_Phdr p = get_phdr(real, i);
    if (p.p_type == PT_INTERP && p.p_offset + p.p_filesz <= real.size())
      end = std::max(end, p.p_offset + p.p_filesz);
    if (p.p_type == PT_LOAD) end = std::max(end, p.p_vaddr % 0x1000);
  }
  end = (end + 15) & ~uint64_t{15};
  Bytes b(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(end, real.size())));
  b.resize(end);
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr p = get_phdr(b, i);
    if (p.p_type != PT_LOAD) continue;
    p.p_offset = p.p_vaddr % 0x1000;
    p.p_filesz = std::min<uint64_t>(p.p_filesz, end - p.p_offset);
    put_phdr(b, i, p);
  }
  return b;
}

// Real binaries that exist on a Debian x86_64 host: a PIE, a non-PIE ET_EXEC,
// the dynamic linker and a static-pie.
inline const std::vector<std::string>& real_binaries() {
  static const std::vector<std::string> v = {
      "/bin/ls", "/usr/bin/python3", "/lib64/ld-linux-x86-64.so.2", "/sbin/ldconfig"};
  return v;
}

inline std::string seed_name(const std::string& path) {
  std::string n = "ok-hdr";
  for (char c : path) n += (c == '/' || c == '.') ? '-' : c;
  return n;
}

}  // namespace flatux::elfcorpus
