// /dev/kmsg: the printk buffer one record per read, Linux's format
// "<prio>,<seq>,<usec>,-;text\n"; a write logs one message ("<N>" sets its
// level; userspace messages get the user facility).
#pragma once

namespace flatux {

struct Task;
struct File;

long kmsg_open(Task& t, int flags, File** out);

}  // namespace flatux
