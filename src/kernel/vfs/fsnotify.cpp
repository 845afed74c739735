#include "kernel/vfs/fsnotify.h"

#include <fcntl.h>
#include <sys/inotify.h>

#include "kernel/vfs/dnotify.h"

namespace flatux {

long notify_created(Task& t, const Lookup& lk, long r, bool link) {
  if (r != 0) return r;
  dnotify_entry(t, lk, DN_CREATE);
  if (!inotify_watching(t)) return r;
  NotifyObject obj = inotify_object(t, lk);
  if (link && obj.known) inotify_name_event(t, lk, 0, 0, obj, IN_ATTRIB);  // its link count, first
  inotify_name_event(t, lk, IN_CREATE, 0, obj, 0);
  return r;
}

NotifyObject notify_before(Task& t, const Lookup& lk) {
  return inotify_watching(t) ? inotify_object(t, lk) : NotifyObject{};
}

long notify_removed(Task& t, const Lookup& lk, long r, const NotifyObject& gone) {
  if (r != 0) return r;
  dnotify_entry(t, lk, DN_DELETE);
  if (!gone.known) return r;
  inotify_unlinked(t, gone);
  inotify_name_event(t, lk, IN_DELETE, 0, gone, 0);
  return r;
}

long notify_renamed(Task& t, const Lookup& a, const Lookup& b, long r, const NotifyObject& moved,
                    const NotifyObject& was, bool exchange) {
  if (r != 0) return r;
  dnotify_entry(t, a, DN_RENAME);
  dnotify_entry(t, b, DN_RENAME);
  if (!moved.known) return r;
  uint32_t cookie = inotify_cookie(t);
  inotify_name_event(t, a, IN_MOVED_FROM, cookie, moved, 0);
  inotify_name_event(t, b, IN_MOVED_TO, cookie, moved, IN_MOVE_SELF);
  if (!was.known || (was.dev == moved.dev && was.ino == moved.ino)) return r;
  if (exchange) {
    uint32_t back = inotify_cookie(t);
    inotify_name_event(t, b, IN_MOVED_FROM, back, was, 0);
    inotify_name_event(t, a, IN_MOVED_TO, back, was, IN_MOVE_SELF);
  } else {
    inotify_unlinked(t, was);  // replaced
  }
  return r;
}

long notify_attr(Task& t, const Lookup& lk, long r, bool size) {
  if (r != 0) return r;
  dnotify_entry(t, lk, size ? DN_MODIFY : DN_ATTRIB);
  if (!inotify_watching(t)) return r;
  uint32_t mask = size ? IN_MODIFY : IN_ATTRIB;
  inotify_name_event(t, lk, mask, 0, inotify_object(t, lk), mask);
  return r;
}

void notify_file_attr(Task& t, File& f, bool size) {
  dnotify_file(t, f, size ? DN_MODIFY : DN_ATTRIB);
  if (inotify_watching(t)) inotify_file_event(t, f, size ? IN_MODIFY : IN_ATTRIB);
}

void notify_open(Task& t, File& f) {
  if (inotify_watching(t)) inotify_file_event(t, f, IN_OPEN);
}

void notify_data(Task& t, File& f, bool write) {
  if (dnotify_watching(t)) dnotify_file(t, f, write ? DN_MODIFY : DN_ACCESS);
  if (inotify_watching(t)) inotify_file_event(t, f, write ? IN_MODIFY : IN_ACCESS);
}

void notify_close(Task& t, File& f) {
  if (!inotify_watching(t)) return;
  inotify_file_event(t, f, (f.flags & O_ACCMODE) != O_RDONLY ? IN_CLOSE_WRITE : IN_CLOSE_NOWRITE);
}

}  // namespace flatux
