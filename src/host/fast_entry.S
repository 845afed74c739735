/* The fast entry: a rewritten guest syscall site enters the kernel here
 * with a jump, with no host kernel entry at all (docs/ARCHITECTURE.md,
 * "Rewritten syscall sites").
 *
 * A site `mov $NR,%eax; syscall` (b8 imm32 0f 05) is rewritten to
 * `jmp stub; syscall`: the 5-byte mov becomes a jump to a per-site stub,
 * the syscall instruction stays where it was (a restart, or a jump to it,
 * still executes it and traps). The stub does what the mov and the syscall
 * instruction would have done to the registers and jumps here:
 *
 *     mov $NR, %eax
 *     lea site+7(%rip), %rcx          ; RCX = the address after the syscall
 *     jmp *flatux_fast_entry
 *
 * Here, as the host kernel would: R11 = RFLAGS (then DF, AC and TF are
 * cleared for kernel code and the guest's flags restored at the end), switch to the task's
 * fast-entry stack without ever writing the guest's stack (a leaf function
 * may keep data below its RSP, the red zone), save the guest's registers
 * as a ucontext there, serve the call, and return by restoring every
 * register but RAX, RCX and R11 (which a real syscall sets too) and jumping
 * to RCX. The thread's GS base is its kernel stack's header (set once when
 * the task's host thread starts); guests cannot set GS through the kernel
 * (arch_prctl ARCH_SET_GS is refused), and a GS base changed by wrgsbase
 * is caught before it is used (SWITCH_STACK).
 *
 * Kernel code never touches vector or x87 registers (it is built with
 * -mgeneral-regs-only), so the guest's FPU state stays live in the CPU
 * through the whole entry and is neither saved nor restored. */
#include "host/fast_entry_layout.h"

#define G(r) FLATUX_FF_GREG(r)
#define R8 0
#define R9 1
#define R10 2
#define R11 3
#define R12 4
#define R13 5
#define R14 6
#define R15 7
#define RDI 8
#define RSI 9
#define RBP 10
#define RBX 11
#define RDX 12
#define RAX 13
#define RCX 14
#define RSP 15
#define RIP 16
#define EFL 17
#define CSGSFS 18

/* Onto the fast-entry stack through %gs (the guest's RSP goes into the
 * header), and the guest's RFLAGS into the frame; DF cleared for C.
 *
 * The guest can change its GS base (wrgsbase) and can jump here by itself,
 * so the header is checked first: its magic's low word must be at %gs:8.
 * Only that read can fault on a bad GS base (the fault handler points GS
 * back at the kernel stack and retries it); any other base ends at the
 * ud2 at \bad with every guest register as it was (R11 aside, which the
 * call clobbers anyway), where the handler does the same and restarts the
 * entry. None of this touches the flags (lea, xchg, jrcxz), which are the
 * guest's until they are saved. */
.macro SWITCH_STACK checked, bad, switched
	mov %gs:FLATUX_KS_MAGIC, %r11d
\checked:
	lea -FLATUX_KS_MAGIC_LO(%r11), %r11   /* zero iff it is a kernel stack's header */
	xchg %r11, %rcx
	jrcxz 1f
	mov %r11, %rcx
\bad:
	ud2
1:	mov %r11, %rcx
	mov %rsp, %gs:FLATUX_KS_GUEST_RSP
	mov %gs:FLATUX_KS_FAST_FRAME, %rsp
\switched:
	pushfq
	popq G(EFL)(%rsp)
	cld
.endm

	.text
	.globl flatux_fast_entry, flatux_fast_entry_switched, flatux_fast_exit_window
	.globl flatux_fast_exit_window_end, flatux_fast_convert, flatux_fast_entry_end
	.globl flatux_fast_entry_page0, flatux_fast_entry_page0_switched
	.globl flatux_fast_entry_checked, flatux_fast_entry_bad_gs, flatux_fast_entry_page0_checked
	.globl flatux_fast_entry_page0_bad_gs, flatux_fast_page0_pop
	.type flatux_fast_entry, @function
	.p2align 6
flatux_fast_entry:
	SWITCH_STACK flatux_fast_entry_checked, flatux_fast_entry_bad_gs, flatux_fast_entry_switched
	movq $0, FLATUX_FF_PAGE0(%rsp)
.Lflags:
	testl $0x40100, G(EFL)(%rsp)   /* the guest's AC (alignment checks) or TF (single-step)? */
	jnz .Lclean_flags
.Lsave:
	mov %rax, G(RAX)(%rsp)
	mov %rax, FLATUX_FF_NR(%rsp)
	mov %rcx, G(RIP)(%rsp)
	mov %rcx, G(RCX)(%rsp)
	mov G(EFL)(%rsp), %r11
	mov %r11, G(R11)(%rsp)
	mov %rdi, G(RDI)(%rsp)
	mov %rsi, G(RSI)(%rsp)
	mov %rdx, G(RDX)(%rsp)
	mov %r10, G(R10)(%rsp)
	mov %r8, G(R8)(%rsp)
	mov %r9, G(R9)(%rsp)
	mov %rbx, G(RBX)(%rsp)
	mov %rbp, G(RBP)(%rsp)
	mov %r12, G(R12)(%rsp)
	mov %r13, G(R13)(%rsp)
	mov %r14, G(R14)(%rsp)
	mov %r15, G(R15)(%rsp)
	mov %gs:FLATUX_KS_GUEST_RSP, %rax
	mov %rax, G(RSP)(%rsp)
	movabs $0x002b000000000033, %rax   /* user CS and SS, as the host's frames have them */
	mov %rax, G(CSGSFS)(%rsp)
	movq $0, FLATUX_FF_FPREGS(%rsp)
	xor %ebp, %ebp                     /* ends the frame-pointer chain for oops backtraces */
	mov %rsp, %rdi
	call flatux_fast_syscall
	test %eax, %eax
	jnz .Lconvert
/* From here to the jump into the guest, a kick (a guest signal sent to this
 * thread) finishes the return itself and delivers the signal: the kick
 * handler copies the frame into its own and treats the thread as if it
 * were already back in guest code (kernel/entry/trap.cpp). */
flatux_fast_exit_window:
	mov %gs:FLATUX_KS_NOTIFY, %rcx
	cmpl $0, (%rcx)
	jne .Lsignals
	mov G(RDI)(%rsp), %rdi
	mov G(RSI)(%rsp), %rsi
	mov G(RDX)(%rsp), %rdx
	mov G(R10)(%rsp), %r10
	mov G(R8)(%rsp), %r8
	mov G(R9)(%rsp), %r9
	mov G(RAX)(%rsp), %rax
	mov G(R11)(%rsp), %r11
	mov G(RBP)(%rsp), %rbp
	mov G(RIP)(%rsp), %rcx
	lea G(EFL)(%rsp), %rsp
	popfq
	mov (G(RSP) - G(EFL) - 8)(%rsp), %rsp
	jmp *%rcx
flatux_fast_exit_window_end:

.Lsignals:
	mov $FLATUX_FAST_SIGNALS, %eax
/* The call needs what only a host signal frame has (the guest's FPU state
 * in memory, a frame the host's rt_sigreturn restores everything from):
 * the ud2 raises SIGILL, whose handler copies this frame into the host's
 * and finishes the call as the trap path would (reason in %edi). */
.Lconvert:
	mov %eax, %edi
	mov %rsp, %rsi
flatux_fast_convert:
	ud2

/* Kernel code runs with neither (a misaligned access would fault). */
.Lclean_flags:
	pushq $2
	popfq
	jmp .Lsave

/* rewrite-page0: a site's `syscall` became `call *%rax` (ff d0), which
 * lands in page 0's nop sled at address NR and slides into a jump to here
 * (zpoline's layout). The call pushed the address after the site onto the
 * guest stack: that is where the call returns (RCX), and the guest's RSP
 * is above it. flatux_fast_syscall checks that it came from a rewritten
 * site and not from a call through a null function pointer. */
	.p2align 4
flatux_fast_entry_page0:
	SWITCH_STACK flatux_fast_entry_page0_checked, flatux_fast_entry_page0_bad_gs, \
		flatux_fast_entry_page0_switched
	movq $1, FLATUX_FF_PAGE0(%rsp)
	testl $0x40100, G(EFL)(%rsp)   /* AC or TF: cleared before touching the guest's stack */
	jz 1f
	pushq $2
	popfq
1:	mov %gs:FLATUX_KS_GUEST_RSP, %rcx
flatux_fast_page0_pop:   /* a guest RSP that points nowhere faults here */
	mov (%rcx), %rcx
	addq $8, %gs:FLATUX_KS_GUEST_RSP
	jmp .Lsave
flatux_fast_entry_end:
	.size flatux_fast_entry, .-flatux_fast_entry

	.section .note.GNU-stack,"",@progbits
