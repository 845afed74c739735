// What the VFS tells those who watch files (fsnotify.cpp): dnotify's
// directory watches and inotify's watches hear of each change here, in the
// order Linux gives their events. Every call costs one load per watcher
// kind while nothing is watched.
#pragma once
#include "kernel/vfs/inotify.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

// The result r of making the name at lk (mkdir, mknod, symlink, an open
// that created, link: then the object gained a name too).
long notify_created(Task& t, const Lookup& lk, long r, bool link = false);

// Removing or renaming a name: what it names is looked at before.
NotifyObject notify_before(Task& t, const Lookup& lk);
long notify_removed(Task& t, const Lookup& lk, long r, const NotifyObject& gone);
// A rename from a to b (was: what b named before, if anything).
long notify_renamed(Task& t, const Lookup& a, const Lookup& b, long r, const NotifyObject& moved,
                    const NotifyObject& was, bool exchange);

// Attributes changed through a name or an open file (truncate: data).
long notify_attr(Task& t, const Lookup& lk, long r, bool size);
void notify_file_attr(Task& t, File& f, bool size);

// An open file was opened, read or written, or closed (its last reference).
void notify_open(Task& t, File& f);
void notify_data(Task& t, File& f, bool write);
void notify_close(Task& t, File& f);

}  // namespace flatux
