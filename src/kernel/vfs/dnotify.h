// dnotify (fcntl F_NOTIFY): a process asks to be told, by SIGIO, when a
// directory's entries change (dnotify.cpp).
#pragma once
#include <cstdint>

#include "kernel/vfs/vfs.h"

namespace flatux {

struct Dnotify;
Dnotify* dnotify_create(Heap* heap);

// F_NOTIFY on descriptor `fd` (the open directory `dir`) with Linux's
// DN_* mask: adds to the watch, or drops it when no event is asked for.
long dnotify_fcntl(Task& t, int fd, File& dir, uint64_t mask);

// Something changed the entry at `lk` (create, delete, rename, attributes):
// watches on its directory, and on the entry itself, hear of it.
void dnotify_entry(Task& t, const Lookup& lk, uint32_t event);
// Data of an open file was read (DN_ACCESS) or written (DN_MODIFY).
void dnotify_file(Task& t, File& f, uint32_t event);
// A directory file with watches is being released.
void dnotify_forget(File& f);
// Whether any directory is watched (a cheap look before extra work).
bool dnotify_watching(Task& t);

// The result `r` of an operation on `lk`, which on success is `event`.
inline long dnotify_result(Task& t, const Lookup& lk, long r, uint32_t event) {
  if (r == 0) dnotify_entry(t, lk, event);
  return r;
}

}  // namespace flatux
