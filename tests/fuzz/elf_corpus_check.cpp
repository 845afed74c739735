// Reads the generated corpus back from disk and checks every file gets the
// verdict the manifest records, through both the one-buffer entry point and
// the loader's header-then-table path.
#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "elf_corpus.h"
#include "kernel/loader/elf_parse.h"

using namespace flatux::elfcorpus;
using namespace flatux::loader;

namespace {

int staged_parse(const Bytes& b, const char** why) {
  ElfImage im;
  int rc = parse_elf_header(b.data(), std::min(b.size(), sizeof(Elf64_Ehdr)), b.size(), &im, why);
  if (rc != 0) return rc;
  Bytes table(b.begin() + static_cast<std::ptrdiff_t>(im.phoff),
              b.begin() + static_cast<std::ptrdiff_t>(im.phoff + im.phnum * im.phentsize));
  return parse_elf_phdrs(table.data(), table.size(), b.size(), &im, why);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR MANIFEST\n", argv[0]);
    return 2;
  }
  std::ifstream manifest(argv[2]);
  if (!manifest) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  int checked = 0, bad = 0, failures = 0;
  std::string line;
  while (std::getline(manifest, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string name = line.substr(0, tab), expect = line.substr(tab + 1);
    auto bytes = read_file(std::string(argv[1]) + "/" + name);
    if (!bytes) {
      std::printf("FAIL %s: missing\n", name.c_str());
      failures++;
      continue;
    }
    ElfImage im;
    const char* why = nullptr;
    const char* why2 = nullptr;
    const int rc = parse_elf_blob(bytes->data(), bytes->size(), &im, &why);
    const int rc2 = staged_parse(*bytes, &why2);
    const std::string got = rc == 0 ? "-" : (why ? why : "(null)");
    const std::string got2 = rc2 == 0 ? "-" : (why2 ? why2 : "(null)");
    checked++;
    if (expect != "-") bad++;
    if (got != expect || got2 != expect || (rc != 0 && rc != -ENOEXEC)) {
      std::printf("FAIL %s: expected \"%s\", got \"%s\" (rc %d), staged \"%s\" (rc %d)\n",
                  name.c_str(), expect.c_str(), got.c_str(), rc, got2.c_str(), rc2);
      failures++;
    }
  }
  std::printf("%d corpus files checked (%d malformed), %d failures\n", checked, bad, failures);
  return failures == 0 && checked > 0 ? 0 : 1;
}
