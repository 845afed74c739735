// Strings, buffers and string arrays in guest memory. All reads go through
// the fault-tolerant copy routines; nothing here trusts a guest pointer.
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/strace/internal.h"

namespace flatux::strace {
namespace {

const void* guest(uint64_t addr) { return reinterpret_cast<const void*>(uintptr_t(addr)); }
const char* guest_str(uint64_t addr) { return reinterpret_cast<const char*>(uintptr_t(addr)); }

// Path bytes are measured and copied in chunks so a 4 KiB path never needs a
// 4 KiB kernel stack buffer.
constexpr size_t kChunk = 64;

// Length of the NUL-terminated guest string at addr, at most `max`;
// -EFAULT if any byte before the NUL (or before max) is unreadable.
long guest_strnlen(uint64_t addr, size_t max) {
  char tmp[kChunk + 1];
  size_t off = 0;
  while (off < max) {
    size_t want = max - off < kChunk ? max - off : kChunk;
    long r = strncpy_from_user(tmp, guest_str(addr + off), want + 1);
    if (r >= 0) return long(off) + r;
    if (r != -ENAMETOOLONG) return r;
    off += want;
  }
  return long(max);
}

}  // namespace

void Quoter::emit(uint8_t c, bool next_is_octal_digit) {
  if (hex_) {
    f_.str("\\x").hexraw(c, 2);
    return;
  }
  switch (c) {
    case '"': f_.str("\\\""); return;
    case '\\': f_.str("\\\\"); return;
    case '\f': f_.str("\\f"); return;
    case '\n': f_.str("\\n"); return;
    case '\r': f_.str("\\r"); return;
    case '\t': f_.str("\\t"); return;
    case '\v': f_.str("\\v"); return;
    default: break;
  }
  if (c >= 0x20 && c < 0x7f) {
    f_.ch(char(c));
    return;
  }
  f_.ch('\\');
  if (next_is_octal_digit || c >= 0100) f_.ch(char('0' + (c >> 6)));
  if (next_is_octal_digit || c >= 010) f_.ch(char('0' + ((c >> 3) & 7)));
  f_.ch(char('0' + (c & 7)));
}

void print_quoted(KFmt& f, const void* p, size_t n, bool ellipsis, bool hex) {
  Quoter q(f, hex);
  q.put(p, n);
  q.finish(ellipsis);
}

void print_guest_bytes(KFmt& f, uint64_t addr, uint64_t len, bool hex) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  uint8_t tmp[kMaxStrLen];
  size_t n = len < kMaxStrLen ? size_t(len) : kMaxStrLen;
  if (n && copy_from_user(tmp, guest(addr), n) != 0) {
    f.hex(addr);
    return;
  }
  print_quoted(f, tmp, n, len > kMaxStrLen, hex);
}

void print_guest_str(KFmt& f, uint64_t addr) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  // One byte more than is shown tells a string of exactly kMaxStrLen bytes
  // (no "...") from a longer one.
  char tmp[kMaxStrLen + 2];
  long r = strncpy_from_user(tmp, guest_str(addr), sizeof tmp);
  if (r >= 0 && size_t(r) <= kMaxStrLen) {
    print_quoted(f, tmp, size_t(r), false);
    return;
  }
  if (r < 0 && r != -ENAMETOOLONG) {
    f.hex(addr);
    return;
  }
  if (copy_from_user(tmp, guest(addr), kMaxStrLen) != 0) {
    f.hex(addr);
    return;
  }
  print_quoted(f, tmp, kMaxStrLen, true);
}

void print_guest_path(KFmt& f, uint64_t addr) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  // Measure first: a path that faults part-way prints as its address, so
  // nothing may be emitted before the whole string is known to be readable.
  long len = guest_strnlen(addr, kPathMax);
  if (len < 0) {
    f.hex(addr);
    return;
  }
  Quoter q(f, false);
  char tmp[kChunk];
  for (size_t off = 0; off < size_t(len); off += kChunk) {
    size_t n = size_t(len) - off < kChunk ? size_t(len) - off : kChunk;
    if (copy_from_user(tmp, guest(addr + off), n) != 0) break;
    q.put(tmp, n);
  }
  q.finish(size_t(len) >= kPathMax);
}

void print_guest_argv(KFmt& f, uint64_t addr) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  uint64_t p;
  if (get_user(p, guest(addr)) != 0) {
    f.hex(addr);
    return;
  }
  f.ch('[');
  for (size_t i = 0; p != 0;) {
    if (i) f.str(", ");
    if (i == kMaxElems) {
      f.str("...");
      break;
    }
    print_guest_str(f, p);
    i++;
    if (get_user(p, guest(addr + 8 * i)) != 0) {
      f.str(", ...");
      break;
    }
  }
  f.ch(']');
}

void print_guest_envp(KFmt& f, uint64_t addr) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  // More pointers than fit in the largest argument area Linux accepts means
  // the array is not a real environment; show just the address then.
  constexpr size_t kMaxVars = 1u << 18;
  constexpr size_t kBatch = 16;
  uint64_t batch[kBatch];
  size_t count = 0;
  bool done = false;
  while (!done && count < kMaxVars) {
    uint64_t at = addr + 8 * count;
    size_t n = kBatch;
    // A batch may run past the end of the mapping; fall back to one by one.
    if (copy_from_user(batch, guest(at), sizeof batch) != 0) {
      if (get_user(batch[0], guest(at)) != 0) break;
      n = 1;
    }
    for (size_t i = 0; i < n; i++) {
      if (batch[i] == 0) {
        done = true;
        break;
      }
      count++;
    }
  }
  f.hex(addr);
  if (done) f.str(" /* ").udec(count).str(count == 1 ? " var */" : " vars */");
}

void print_guest_iovec(KFmt& f, uint64_t addr, uint64_t count, uint64_t limit, bool show_data) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  uint64_t iov[2];
  if (count && copy_from_user(iov, guest(addr), sizeof iov) != 0) {
    f.hex(addr);
    return;
  }
  f.ch('[');
  uint64_t left = limit;
  for (uint64_t i = 0; i < count; i++) {
    if (i) {
      f.str(", ");
      if (i == kMaxElems) {
        f.str("...");
        break;
      }
      if (copy_from_user(iov, guest(addr + 16 * i), sizeof iov) != 0) {
        f.str("...");
        break;
      }
    }
    f.str("{iov_base=");
    if (show_data) {
      uint64_t n = iov[1] < left ? iov[1] : left;
      print_guest_bytes(f, iov[0], n);
      left -= n;
    } else {
      print_ptr(f, iov[0]);
    }
    f.str(", iov_len=").udec(iov[1]).ch('}');
  }
  f.ch(']');
}

}  // namespace flatux::strace
