// `flatux mkimage`: an ext4 image from a folder or a tar archive, built
// without privileges.
#pragma once

#include <cstdint>
#include <string>

namespace flatux::mkimage {

struct Options {
  std::string src;     // a folder, a tar archive (plain, .gz, .xz, .bz2) or "-"
  std::string output;  // the image file, created or overwritten
  std::string size;    // "" (from the content) or bytes with a K/M/G/T suffix
  std::string label;
};

// Exit status: 0, or 1 after one message on stderr.
int run(const Options& o);

// "64M" -> 67108864 (binary multiples); false when malformed.
bool parse_size(const std::string& s, uint64_t& out);

}  // namespace flatux::mkimage
