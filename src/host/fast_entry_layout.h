/* Offsets the fast entry (host/fast_entry.S) uses, shared by C++ and the
 * assembler; host/kstack.h checks them against the structures. */
#pragma once

/* KStackHeader fields, read through %gs; the magic's low word, which the
 * entry checks there before trusting its GS base. */
#define FLATUX_KS_MAGIC 8
#define FLATUX_KS_MAGIC_LO 0x636b2121
#define FLATUX_KS_FAST_FRAME 24
#define FLATUX_KS_GUEST_RSP 32
#define FLATUX_KS_NOTIFY 40

/* FastFrame: a host ucontext_t, then the syscall number. */
#define FLATUX_FF_GREGS 40
#define FLATUX_FF_FPREGS 224
#define FLATUX_FF_NR 968
#define FLATUX_FF_PAGE0 976
#define FLATUX_FF_GREG(i) (FLATUX_FF_GREGS + 8 * (i))

/* Why a fast entry becomes a trap (flatux_fast_syscall's result, then
 * %edi at flatux_fast_convert's ud2). 0: return straight to the guest. */
#define FLATUX_FAST_DONE 0
#define FLATUX_FAST_TRAP_BEFORE 1  /* the call needs the host's full frame (sigreturn, clone) */
#define FLATUX_FAST_SIGNALS 2      /* served; signals to deliver or a call to restart */
#define FLATUX_FAST_NOT_A_SITE 3   /* page 0 entered by something that is not a rewritten site */
