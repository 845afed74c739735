// Lays out an ext4 filesystem in an image file with libext2fs and fills it
// with Entries, writing every inode field itself so owners, devices and
// times need no privileges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tools/mkimage/source.h"

namespace flatux::mkimage {

struct Layout {
  uint64_t bytes = 0;   // image size, a multiple of the 4 KiB block size
  uint64_t inodes = 0;  // 0: one per 16 KiB, as mke2fs does
  std::string label;
};

class Ext4Writer {
 public:
  // Formats `image` (an existing, zero-filled file of layout.bytes).
  Ext4Writer(const std::string& image, const Layout& layout);
  ~Ext4Writer();
  Ext4Writer(const Ext4Writer&) = delete;
  Ext4Writer& operator=(const Ext4Writer&) = delete;

  // Entries arrive parents first, as sources produce them; missing parent
  // folders are made (0755, root), and a later entry of the same name
  // replaces an earlier one, as tar extraction does.
  void add(const Entry& e, Data* data);
  // Writes the superblocks, group descriptors and bitmaps; the image is
  // valid only after this.
  void finish();

  uint64_t used_bytes() const;
  uint64_t total_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flatux::mkimage
