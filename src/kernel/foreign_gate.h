// The one gate through which kernel code may call foreign C code (code that
// uses host TLS: libc's malloc, stdio, errno; libext2fs). It points FS at a
// real host TLS block for the duration of the call and back at the guest's.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// Calls fn(arg) with host TLS. Calls are serialised: the TLS block belongs
// to one parked host thread, and the libraries behind it are not
// thread-safe anyway. A call made from inside fn on the same thread runs
// straight away (a filesystem on a loop device reading its file from
// another volume).
// Foreign code runs in the first host process only: its libc heap and TLS
// are the ones the libraries know. A task in another host process (a
// forked one) hands the call to a server thread there and sleeps until it
// is done; the arguments live in the kernel heap or on the caller's kernel
// stack, which every host process shares.
long foreign_call(Kernel& k, long (*fn)(void*), void* arg);

// Starts the server thread in the calling host process, the first one
// (tasks_lock held).
long foreign_gate_start_server(Kernel& k);

}  // namespace flatux
