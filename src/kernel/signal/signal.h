// Guest signals: sending, queueing, and delivery on the way back to guest
// code (a Linux rt_sigframe on the guest's stack).
#pragma once
#include <csignal>

#include "kernel/task/task.h"

namespace flatux {

// Kernel-internal restart codes (never seen by the guest): the signal code
// turns them into EINTR or a restart of the interrupted syscall.
constexpr long ERESTARTSYS = 512;
constexpr long ERESTARTNOINTR = 513;
constexpr long ERESTARTNOHAND = 514;
constexpr long ERESTART_RESTARTBLOCK = 516;

// Queues `sig` for process p (target == nullptr) or for one of its threads,
// and makes a thread that can take it look at it. Returns 0 or -errno.
// `from` says whose doing it is: the guest's init drops, as Linux's
// SIGNAL_UNKILLABLE init does, a signal another guest process sends it
// while its action is the default one (SIGKILL and SIGSTOP included).
// With `deferred`, a single thread to wake is not kicked but handed back,
// pinned, for kick_pinned() once the caller has let go of tasks_lock (the
// woken thread often wants it at once).
long send_signal(Process& p, Task* target, int sig, const siginfo_t& info, SigSender from,
                 Task** deferred = nullptr);
// The sender a process's own action makes (a syscall of its task).
inline SigSender sent_by(const Process& p) { return SigSender{p.pid}; }
constexpr SigSender kFromOutside{};  // the host, the terminal, the kernel itself
constexpr SigSender kFromEngine{0, true};  // a container engine (KernelConfig::container_init)
// Kicks and unpins a task send_signal handed back (nullptr: nothing).
void kick_pinned(Task* t);

// Sends to every live process of group `pgrp` (tasks_lock held); returns
// how many there were.
int send_signal_pgrp_locked(Kernel& k, int pgrp, int sig, const siginfo_t& info, SigSender from);

// A siginfo for kill()-style sends from task t (SI_USER, or `code`).
siginfo_t user_siginfo(Task& t, int sig, int code);

// Delivers what is pending for t (t.regs must be set). `syscall_nr` is the
// call being returned from (for restarts), or -1.
void handle_signals(Task& t, long syscall_nr);

// A synchronous fault in guest code: forced on the task like Linux's
// force_sig (unblocked and un-ignored if needed).
void guest_fault(Task& t, int sig, const siginfo_t* si);

// Recomputes t.notify from its mask and the pending sets (siglock held).
void recalc_notify_locked(Task& t);

// Will t's process die of what is pending for t (SIGKILL, a group exit,
// an unblocked signal whose default action kills)? What a killable wait
// asks, as Linux's fatal_signal_pending.
bool fatal_signal_pending(Task& t);

// Is `sig` deliverable to t now (pending and unblocked)? (siglock held)
bool has_deliverable_locked(Task& t);

// Takes the first queued instance of `sig` out of p (siglock held). Returns
// whether another guest process sent it (SigQueued::by_other).
bool dequeue_signal_locked(Heap* h, SigPending& p, int sig, siginfo_t* info);

// Queued-signal entries, counted against the receiving process's user's
// RLIMIT_SIGPENDING. sigq_alloc returns nullptr over the limit (unless
// over_limit_ok) or without memory. (siglock held for the push)
SigQueued* sigq_alloc(Process& to, bool over_limit_ok);
void sigq_free(Heap* h, SigQueued* q);
void sigq_push(SigPending& p, int sig, SigQueued* q, bool front);
void sigq_clear(Heap* h, SigPending& p);  // frees every entry and empties the set

// Sleeps until t.notify is set (a signal to handle, or an exit), or for
// `rel` at most; returns what the host wait returned. Senders wake it with
// a futex wake (kick_task), no host signal needed.
long wait_for_notify(Task& t, const timespec* rel);

// Changes t's blocked set (SIGKILL/SIGSTOP stay unblocked) and rechecks.
void set_sigmask(Task& t, uint64_t mask);

// Default-action classes.
bool sig_default_ignore(int sig);
bool sig_default_stop(int sig);
bool sig_default_core(int sig);

// Guest rt_sigreturn: restores the context saved in the guest's frame.
long sigreturn(Task& t);

}  // namespace flatux
