// The ELF parser against the real binaries on this host and against the
// hand-built malformed images shared with the fuzz corpus.
#include "kernel/loader/elf_parse.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>
#include <optional>

#include "../fuzz/elf_corpus.h"

namespace {

using flatux::elfcorpus::Bytes;
using flatux::loader::ElfImage;
using flatux::loader::parse_elf_blob;
using flatux::loader::parse_elf_header;
using flatux::loader::parse_elf_phdrs;
namespace corpus = flatux::elfcorpus;

struct Parsed {
  int rc;
  std::string why;
  ElfImage im;
};

Parsed parse(const Bytes& b) {
  Parsed p{};
  const char* why = nullptr;
  p.rc = parse_elf_blob(b.data(), b.size(), &p.im, &why);
  p.why = p.rc == 0 ? "" : (why ? why : "(null)");
  return p;
}

// The loader's way: 64 bytes first, then a separately read table.
Parsed parse_staged(const Bytes& b) {
  Parsed p{};
  const char* why = nullptr;
  p.rc = parse_elf_header(b.data(), std::min(b.size(), sizeof(Elf64_Ehdr)), b.size(), &p.im,
                          &why);
  if (p.rc == 0) {
    Bytes table(b.begin() + static_cast<std::ptrdiff_t>(p.im.phoff),
                b.begin() + static_cast<std::ptrdiff_t>(p.im.phoff +
                                                        p.im.phnum * p.im.phentsize));
    p.rc = parse_elf_phdrs(table.data(), table.size(), b.size(), &p.im, &why);
  }
  p.why = p.rc == 0 ? "" : (why ? why : "(null)");
  return p;
}

Bytes slurp(const std::string& path) {
  auto b = corpus::read_file(path);
  return b ? *b : Bytes{};
}

// An independent, unchecked decode of the raw program headers, to compare
// the parser's output with.
struct RawPhdrs {
  Elf64_Ehdr eh;
  std::vector<Elf64_Phdr> loads;
  std::optional<Elf64_Phdr> interp, pt_phdr, stack;
};

RawPhdrs raw(const Bytes& b) {
  RawPhdrs r{corpus::get_ehdr(b), {}, {}, {}, {}};
  for (int i = 0; i < r.eh.e_phnum; i++) {
    Elf64_Phdr p = corpus::get_phdr(b, i);
    if (p.p_type == PT_LOAD && p.p_memsz != 0) r.loads.push_back(p);
    if (p.p_type == PT_INTERP) r.interp = p;
    if (p.p_type == PT_PHDR) r.pt_phdr = p;
    if (p.p_type == PT_GNU_STACK) r.stack = p;
  }
  return r;
}

void expect_matches_raw(const Bytes& b, const ElfImage& im) {
  const RawPhdrs r = raw(b);
  EXPECT_EQ(im.type, r.eh.e_type);
  EXPECT_EQ(im.entry, r.eh.e_entry);
  EXPECT_EQ(im.phoff, r.eh.e_phoff);
  EXPECT_EQ(im.phnum, r.eh.e_phnum);
  EXPECT_EQ(im.phentsize, sizeof(Elf64_Phdr));
  ASSERT_EQ(im.nsegs, static_cast<int>(r.loads.size()));
  for (int i = 0; i < im.nsegs; i++) {
    const auto& s = im.segs[i];
    const auto& p = r.loads[i];
    EXPECT_EQ(s.vaddr, p.p_vaddr) << i;
    EXPECT_EQ(s.memsz, p.p_memsz) << i;
    EXPECT_EQ(s.offset, p.p_offset) << i;
    EXPECT_EQ(s.filesz, p.p_filesz) << i;
    EXPECT_EQ((s.prot & PROT_READ) != 0, (p.p_flags & PF_R) != 0) << i;
    EXPECT_EQ((s.prot & PROT_WRITE) != 0, (p.p_flags & PF_W) != 0) << i;
    EXPECT_EQ((s.prot & PROT_EXEC) != 0, (p.p_flags & PF_X) != 0) << i;
  }
  EXPECT_EQ(im.min_vaddr, r.loads.front().p_vaddr & ~0xfffULL);
  EXPECT_EQ(im.max_vaddr,
            (r.loads.back().p_vaddr + r.loads.back().p_memsz + 0xfff) & ~0xfffULL);
  EXPECT_EQ(im.has_interp, r.interp.has_value());
  if (r.interp) {
    EXPECT_EQ(im.interp_offset, r.interp->p_offset);
    EXPECT_EQ(im.interp_size, r.interp->p_filesz);
  }
  if (r.pt_phdr) {
    EXPECT_TRUE(im.has_phdr_vaddr);
    EXPECT_EQ(im.phdr_vaddr, r.pt_phdr->p_vaddr);
  }
  EXPECT_EQ(im.has_gnu_stack, r.stack.has_value());
  EXPECT_EQ(im.exec_stack, r.stack && (r.stack->p_flags & PF_X));
}

std::string interp_of(const Bytes& b, const ElfImage& im) {
  return std::string(reinterpret_cast<const char*>(b.data() + im.interp_offset),
                     strnlen(reinterpret_cast<const char*>(b.data() + im.interp_offset),
                             im.interp_size));
}

int exec_segment(const ElfImage& im) {
  for (int i = 0; i < im.nsegs; i++)
    if (im.segs[i].prot & PROT_EXEC) return i;
  return -1;
}

TEST(ElfParseReal, BinLsIsPie) {
  Bytes b = slurp("/bin/ls");
  if (b.empty()) GTEST_SKIP() << "/bin/ls not readable";
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
  EXPECT_EQ(p.im.type, ET_DYN);
  EXPECT_EQ(p.im.min_vaddr, 0u);
  EXPECT_GE(p.im.nsegs, 2);
  EXPECT_TRUE(p.im.has_interp);
  EXPECT_EQ(interp_of(b, p.im), "/lib64/ld-linux-x86-64.so.2");
  EXPECT_TRUE(p.im.has_phdr_vaddr);
  EXPECT_EQ(p.im.phdr_vaddr, 0x40u);
  EXPECT_FALSE(p.im.exec_stack);
  EXPECT_GE(exec_segment(p.im), 0);
}

TEST(ElfParseReal, Python3IsFixedAddressExec) {
  Bytes b = slurp("/usr/bin/python3");
  if (b.empty()) GTEST_SKIP() << "/usr/bin/python3 not readable";
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
  if (p.im.type != ET_EXEC) GTEST_SKIP() << "this python3 is a PIE";
  EXPECT_EQ(p.im.min_vaddr, 0x400000u);
  EXPECT_GT(p.im.max_vaddr, p.im.min_vaddr);
  EXPECT_EQ(p.im.phdr_vaddr, 0x400000u + p.im.phoff);
  EXPECT_EQ(interp_of(b, p.im), "/lib64/ld-linux-x86-64.so.2");
  const int x = exec_segment(p.im);
  ASSERT_GE(x, 0);
  // Linux does not require it, but a sane ld output has its entry in text.
  EXPECT_GE(p.im.entry, p.im.segs[x].vaddr);
  EXPECT_LT(p.im.entry, p.im.segs[x].vaddr + p.im.segs[x].memsz);
}

TEST(ElfParseReal, DynamicLinkerHasNoPtPhdr) {
  Bytes b = slurp("/lib64/ld-linux-x86-64.so.2");
  if (b.empty()) GTEST_SKIP() << "no dynamic linker at /lib64";
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
  EXPECT_EQ(p.im.type, ET_DYN);
  EXPECT_FALSE(p.im.has_interp);
  EXPECT_EQ(p.im.min_vaddr, 0u);
  // No PT_PHDR: found through the first PT_LOAD, which maps offset 0 at 0.
  if (!raw(b).pt_phdr) {
    EXPECT_TRUE(p.im.has_phdr_vaddr);
    EXPECT_EQ(p.im.phdr_vaddr, p.im.phoff);
  }
}

TEST(ElfParseReal, StaticPie) {
  // Debian links ldconfig as a static-pie.
  Bytes b = slurp("/sbin/ldconfig");
  if (b.empty()) GTEST_SKIP() << "no /sbin/ldconfig";
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
  EXPECT_EQ(p.im.type, ET_DYN);
  EXPECT_FALSE(p.im.has_interp);
  EXPECT_EQ(p.im.min_vaddr, 0u);
  EXPECT_TRUE(p.im.has_phdr_vaddr);
}

TEST(ElfParseReal, OwnExecutable) {
  Bytes b = slurp("/proc/self/exe");
  if (b.empty()) GTEST_SKIP() << "/proc/self/exe not readable";
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
}

TEST(ElfParseReal, StagedParseAgreesWithBlob) {
  for (const std::string& path : corpus::real_binaries()) {
    Bytes b = slurp(path);
    if (b.empty()) continue;
    Parsed a = parse(b), s = parse_staged(b);
    ASSERT_EQ(a.rc, 0) << path << ": " << a.why;
    ASSERT_EQ(s.rc, 0) << path << ": " << s.why;
    EXPECT_EQ(a.im.nsegs, s.im.nsegs) << path;
    EXPECT_EQ(a.im.min_vaddr, s.im.min_vaddr) << path;
    EXPECT_EQ(a.im.max_vaddr, s.im.max_vaddr) << path;
    EXPECT_EQ(a.im.phdr_vaddr, s.im.phdr_vaddr) << path;
  }
}

TEST(ElfParseReal, HeaderSeedsStayValid) {
  for (const std::string& path : corpus::real_binaries()) {
    Bytes b = slurp(path);
    if (b.empty()) continue;
    auto seed = corpus::header_seed(b);
    ASSERT_TRUE(seed) << path;
    EXPECT_LE(seed->size(), 8192u) << path;
    Parsed p = parse(*seed);
    ASSERT_EQ(p.rc, 0) << path << ": " << p.why;
    Parsed full = parse(b);
    EXPECT_EQ(p.im.min_vaddr, full.im.min_vaddr) << path;
    EXPECT_EQ(p.im.max_vaddr, full.im.max_vaddr) << path;
    EXPECT_EQ(p.im.phdr_vaddr, full.im.phdr_vaddr) << path;
  }
}

TEST(ElfParseValid, ExecBaseFields) {
  Bytes b = corpus::exec_base();
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  expect_matches_raw(b, p.im);
  EXPECT_EQ(p.im.type, ET_EXEC);
  EXPECT_EQ(p.im.nsegs, 2);
  EXPECT_EQ(p.im.min_vaddr, 0x400000u);
  EXPECT_EQ(p.im.max_vaddr, 0x403000u);  // data ends at 0x402200
  EXPECT_EQ(p.im.phdr_vaddr, 0x400040u);
  EXPECT_EQ(p.im.segs[0].prot, uint32_t{PROT_READ | PROT_EXEC});
  EXPECT_EQ(p.im.segs[1].prot, uint32_t{PROT_READ | PROT_WRITE});
  EXPECT_EQ(interp_of(b, p.im), corpus::kInterpPath);
  EXPECT_EQ(p.im.interp_size, sizeof corpus::kInterpPath);
  EXPECT_TRUE(p.im.has_gnu_stack);
  EXPECT_FALSE(p.im.exec_stack);
}

TEST(ElfParseValid, DynBaseFields) {
  Parsed p = parse(corpus::dyn_base());
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_EQ(p.im.type, ET_DYN);
  EXPECT_EQ(p.im.min_vaddr, 0u);
  EXPECT_EQ(p.im.max_vaddr, 0x2000u);
  EXPECT_FALSE(p.im.has_interp);
  EXPECT_TRUE(p.im.has_phdr_vaddr);
  EXPECT_EQ(p.im.phdr_vaddr, 0x40u);
}

TEST(ElfParseValid, PhdrsFoundThroughLoadWithoutPtPhdr) {
  Bytes b = corpus::with_phdr(corpus::exec_base(), corpus::kPhPhdr,
                              [](Elf64_Phdr& p) { p.p_type = PT_NOTE; });
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_TRUE(p.im.has_phdr_vaddr);
  EXPECT_EQ(p.im.phdr_vaddr, 0x400040u);
}

TEST(ElfParseValid, PhdrsNotLoaded) {
  // Text no longer reaches the end of the table, and there is no PT_PHDR.
  Bytes b = corpus::with_phdr(corpus::exec_base(), corpus::kPhPhdr,
                              [](Elf64_Phdr& p) { p.p_type = PT_NOTE; });
  b = corpus::with_phdr(b, corpus::kPhText, [](Elf64_Phdr& p) { p.p_filesz = 0x100; });
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_FALSE(p.im.has_phdr_vaddr);
  EXPECT_EQ(p.im.phdr_vaddr, 0u);
}

TEST(ElfParseValid, SharedPageIsNotOverlap) {
  Bytes b = corpus::with_phdr(corpus::exec_base(), corpus::kPhData,
                              [](Elf64_Phdr& p) { p.p_vaddr = corpus::kExecBase + 0x200; });
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_EQ(p.im.segs[0].vaddr + p.im.segs[0].memsz, p.im.segs[1].vaddr);
  EXPECT_EQ(p.im.max_vaddr, 0x402000u);
}

TEST(ElfParseValid, ExecutableStack) {
  Bytes b = corpus::with_phdr(corpus::exec_base(), corpus::kPhStack,
                              [](Elf64_Phdr& p) { p.p_flags |= PF_X; });
  Parsed p = parse(b);
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_TRUE(p.im.exec_stack);
}

TEST(ElfParseValid, SixteenLoadsAreAccepted) {
  std::vector<Elf64_Phdr> loads;
  for (int i = 0; i < flatux::loader::kMaxLoadSegments; i++)
    loads.push_back(corpus::phdr(PT_LOAD, PF_R, 0, 0x400000 + i * 0x1000, 0x10, 0x10));
  Parsed p = parse(corpus::make_elf(ET_EXEC, 0x400000, loads, 0x1000));
  ASSERT_EQ(p.rc, 0) << p.why;
  EXPECT_EQ(p.im.nsegs, flatux::loader::kMaxLoadSegments);
}

TEST(ElfParseValid, ReusedImageIsReset) {
  ElfImage im;
  const char* why = nullptr;
  Bytes big = corpus::exec_base();
  ASSERT_EQ(parse_elf_blob(big.data(), big.size(), &im, &why), 0);
  Bytes small = corpus::dyn_base();
  ASSERT_EQ(parse_elf_blob(small.data(), small.size(), &im, &why), 0);
  EXPECT_FALSE(im.has_interp);
  EXPECT_EQ(im.interp_size, 0u);
  EXPECT_EQ(im.segs[2].memsz, 0u);
}

TEST(ElfParseValid, AllCorpusValidCasesAccepted) {
  for (const auto& c : corpus::valid_cases()) {
    Parsed p = parse(c.bytes);
    EXPECT_EQ(p.rc, 0) << c.name << ": " << p.why;
    Parsed s = parse_staged(c.bytes);
    EXPECT_EQ(s.rc, 0) << c.name << " (staged): " << s.why;
  }
}

TEST(ElfParseMalformed, EveryCorpusCaseRejectedWithItsMessage) {
  for (const auto& c : corpus::malformed_cases()) {
    Parsed p = parse(c.bytes);
    EXPECT_EQ(p.rc, -ENOEXEC) << c.name;
    EXPECT_EQ(p.why, c.why) << c.name;
    Parsed s = parse_staged(c.bytes);
    EXPECT_EQ(s.rc, -ENOEXEC) << c.name << " (staged)";
    EXPECT_EQ(s.why, c.why) << c.name << " (staged)";
  }
}

// The cases the loader's error messages are most likely to be read for, each
// spelled out so a failure names the case directly.
void expect_rejected(const char* name, std::string_view why) {
  for (const auto& c : corpus::malformed_cases()) {
    if (c.name != name) continue;
    Parsed p = parse(c.bytes);
    EXPECT_EQ(p.rc, -ENOEXEC);
    EXPECT_EQ(p.why, why);
    return;
  }
  ADD_FAILURE() << "no corpus case " << name;
}

TEST(ElfParseMalformed, TruncatedHeader) {
  expect_rejected("bad-truncated-header", "truncated ELF header");
  expect_rejected("bad-empty-file", "truncated ELF header");
}
TEST(ElfParseMalformed, PhdrsBeyondFile) {
  expect_rejected("bad-phoff-beyond-file", "program headers beyond end of file");
  expect_rejected("bad-phoff-overflow", "program headers beyond end of file");
  expect_rejected("bad-truncated-phdrs", "program headers beyond end of file");
}
TEST(ElfParseMalformed, OverlappingLoad) {
  expect_rejected("bad-overlapping-load", "overlapping PT_LOAD segments");
  expect_rejected("bad-unsorted-load", "PT_LOAD segments not in address order");
}
TEST(ElfParseMalformed, MemszBelowFilesz) {
  expect_rejected("bad-filesz-gt-memsz", "p_filesz larger than p_memsz");
}
TEST(ElfParseMalformed, HugeMemsz) {
  expect_rejected("bad-huge-memsz", "segment too large");
  expect_rejected("bad-memsz-wraps", "segment too large");
  expect_rejected("bad-span-too-large", "PT_LOAD span too large");
}
TEST(ElfParseMalformed, OffsetBeyondFile) {
  expect_rejected("bad-offset-beyond-file", "segment beyond end of file");
  expect_rejected("bad-filesz-beyond-file", "segment beyond end of file");
  expect_rejected("bad-offset-overflow", "segment beyond end of file");
}
TEST(ElfParseMalformed, AddressSpace) {
  expect_rejected("bad-vaddr-wraps", "segment beyond user address space");
  expect_rejected("bad-above-user-space", "segment beyond user address space");
  expect_rejected("bad-exec-page-zero", "ET_EXEC segment below 64 KiB");
  expect_rejected("bad-misaligned-load", "misaligned PT_LOAD segment");
}
TEST(ElfParseMalformed, WrongMachineClassType) {
  expect_rejected("bad-machine-i386", "not an x86_64 ELF");
  expect_rejected("bad-machine-aarch64", "not an x86_64 ELF");
  expect_rejected("bad-class-32", "not a 64-bit ELF");
  expect_rejected("bad-big-endian", "not a little-endian ELF");
  expect_rejected("bad-magic", "not an ELF file");
  expect_rejected("bad-type-rel", "not an executable or shared object");
  expect_rejected("bad-ident-version", "unsupported ELF version");
}
TEST(ElfParseMalformed, TooManyPhdrs) {
  expect_rejected("bad-too-many-phdrs", "too many program headers");
  expect_rejected("bad-phnum-xnum", "too many program headers");
  expect_rejected("bad-no-phdrs", "no program headers");
  expect_rejected("bad-phentsize", "bad e_phentsize");
  expect_rejected("bad-too-many-loads", "too many PT_LOAD segments");
  expect_rejected("bad-no-load", "no PT_LOAD segment");
}
TEST(ElfParseMalformed, BadInterp) {
  expect_rejected("bad-interp-empty", "bad PT_INTERP");
  expect_rejected("bad-interp-just-nul", "bad PT_INTERP");
  expect_rejected("bad-interp-too-long", "bad PT_INTERP");
  expect_rejected("bad-interp-beyond-file", "bad PT_INTERP");
  expect_rejected("bad-interp-offset-overflow", "bad PT_INTERP");
  expect_rejected("bad-two-interp", "multiple PT_INTERP");
}

TEST(ElfParseMalformed, RealBinaryCutToItsHeaders) {
  Bytes b = slurp("/bin/ls");
  if (b.size() < 1024) GTEST_SKIP() << "/bin/ls not readable";
  b.resize(1024);
  Parsed p = parse(b);
  EXPECT_EQ(p.rc, -ENOEXEC);
  EXPECT_EQ(p.why, "segment beyond end of file");
}

TEST(ElfParseMalformed, EveryHeaderPrefixOfARealBinaryIsSafe) {
  // Each prefix of the headers is a file the parser must reject cleanly
  // (ASan builds catch any read past the vector).
  Bytes b = slurp("/bin/ls");
  if (b.empty()) GTEST_SKIP() << "/bin/ls not readable";
  for (size_t n = 0; n < std::min<size_t>(1024, b.size()); n++) {
    Bytes cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    Parsed p = parse(cut);
    EXPECT_EQ(p.rc, -ENOEXEC) << n;
  }
}

TEST(ElfParseApi, PhdrsStepChecksItsInputs) {
  ElfImage im;
  const char* why = nullptr;
  // Without a successful header step there is nothing to trust.
  uint8_t table[56] = {};
  EXPECT_EQ(parse_elf_phdrs(table, sizeof table, 4096, &im, &why), -ENOEXEC);
  Bytes b = corpus::exec_base();
  ASSERT_EQ(parse_elf_header(b.data(), 64, b.size(), &im, &why), 0);
  EXPECT_EQ(parse_elf_phdrs(b.data() + 64, 5 * 56 - 1, b.size(), &im, &why), -ENOEXEC);
  EXPECT_STREQ(why, "truncated program headers");
  EXPECT_EQ(parse_elf_phdrs(nullptr, 0, b.size(), &im, &why), -ENOEXEC);
}

TEST(ElfParseApi, HeaderStepNeedsWholeHeader) {
  ElfImage im;
  const char* why = nullptr;
  Bytes b = corpus::exec_base();
  EXPECT_EQ(parse_elf_header(b.data(), 63, b.size(), &im, &why), -ENOEXEC);
  EXPECT_STREQ(why, "truncated ELF header");
  EXPECT_EQ(parse_elf_header(nullptr, 64, b.size(), &im, &why), -ENOEXEC);
  // The table must fit in the whole file, not just in the bytes read so far.
  EXPECT_EQ(parse_elf_header(b.data(), 64, 64 + 5 * 56 - 1, &im, &why), -ENOEXEC);
  EXPECT_STREQ(why, "program headers beyond end of file");
  EXPECT_EQ(parse_elf_header(b.data(), 64, 64 + 5 * 56, &im, &why), 0);
}

TEST(ElfParseApi, NullWhyIsAllowed) {
  ElfImage im;
  Bytes b = corpus::exec_base();
  b[0] = 0;
  EXPECT_EQ(parse_elf_blob(b.data(), b.size(), &im, nullptr), -ENOEXEC);
}

}  // namespace
