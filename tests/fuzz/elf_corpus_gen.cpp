// Writes the ELF seed corpus: the hand-built valid and malformed images from
// elf_corpus.h plus header-only seeds cut from real binaries on this host, and
// a manifest naming the message each malformed file must be rejected with.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "elf_corpus.h"

using namespace flatux::elfcorpus;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR MANIFEST\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<Case> cases = valid_cases();
  for (auto& c : malformed_cases()) cases.push_back(std::move(c));
  for (const std::string& path : real_binaries()) {
    auto real = read_file(path);
    if (!real) continue;
    auto seed = header_seed(*real);
    if (!seed) continue;
    cases.push_back({seed_name(path), *seed, nullptr});
    // The same cut without the fix-ups: the first PT_LOAD now runs past the
    // end of the file. Only kept when that is what the parser meets first.
    const Elf64_Ehdr eh = get_ehdr(*real);
    for (int i = 0; i < eh.e_phnum; i++) {
      const Elf64_Phdr p = get_phdr(*real, i);
      if (p.p_type != PT_LOAD) continue;
      if (p.p_offset + p.p_filesz > seed->size() && p.p_offset <= seed->size() &&
          p.p_memsz != 0) {
        std::string name = "bad-cut" + seed_name(path).substr(6);
        Bytes cut(real->begin(), real->begin() + static_cast<std::ptrdiff_t>(seed->size()));
        cases.push_back({name, cut, "segment beyond end of file"});
      }
      break;
    }
  }

  std::ofstream manifest(argv[2], std::ios::trunc);
  for (const Case& c : cases) {
    std::ofstream f(dir + "/" + c.name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(c.bytes.data()),
            static_cast<std::streamsize>(c.bytes.size()));
    if (!f) {
      std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), c.name.c_str());
      return 1;
    }
    manifest << c.name << '\t' << (c.why ? c.why : "-") << '\n';
  }
  if (!manifest) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("wrote %zu ELF corpus files to %s\n", cases.size(), dir.c_str());
  return 0;
}
