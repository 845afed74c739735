// inotify (inotify.cpp): watches on files and folders, identified as stat
// shows them (device, inode number), hearing of what the kernel itself
// does to them: names made, removed and moved, attributes, data read and
// written, opens and closes. Changes a host program makes to a hostfs
// folder behind flatux's back are not seen (as with dnotify).
//
// The VFS reports each change through the calls below, each made only
// while inotify_watching() (one relaxed load otherwise).
#pragma once
#include <cstdint>

#include "kernel/vfs/vfs.h"

namespace flatux {

struct Inotify;
Inotify* inotify_create(Heap* heap);

// Whether any watch exists.
bool inotify_watching(Task& t);

// An object as inotify knows it; `known` false when it could not be found.
struct NotifyObject {
  uint64_t dev = 0, ino = 0;
  uint64_t nlink = 0;
  bool dir = false;
  bool known = false;
};
// The object the name at lk leads to (its last component not followed).
NotifyObject inotify_object(Task& t, const Lookup& lk);

// A change to the name at lk: watches on its folder hear `mask` with the
// name (IN_ISDIR added for a folder), then watches on `obj` hear
// `self_mask` (either 0: nothing).
void inotify_name_event(Task& t, const Lookup& lk, uint32_t mask, uint32_t cookie, const NotifyObject& obj,
                        uint32_t self_mask);
// An object lost its last name (IN_DELETE_SELF), or one of its names
// (IN_ATTRIB): said to the watches on it; the first ends them.
void inotify_unlinked(Task& t, const NotifyObject& obj);
// The open file f was opened, read, written or closed (IN_OPEN, IN_ACCESS,
// IN_MODIFY, IN_CLOSE_*, IN_ATTRIB): said to watches on it and on its folder.
void inotify_file_event(Task& t, File& f, uint32_t mask);
// A rename's cookie, tying its IN_MOVED_FROM to its IN_MOVED_TO.
uint32_t inotify_cookie(Task& t);

}  // namespace flatux
