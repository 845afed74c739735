/* Host-facing entry and exit stubs of the trap path. */
	.text

/* void flatux_sigreturn_to(ucontext_t *uc)  -- noreturn.
 * Enters guest code with the complete register state in *uc by asking the
 * host kernel to "return" from a signal frame we built ourselves. */
	.globl flatux_sigreturn_to
	.type flatux_sigreturn_to, @function
flatux_sigreturn_to:
	mov %rdi, %rsp
	mov $15, %eax          /* rt_sigreturn */
	syscall
	ud2
	.size flatux_sigreturn_to, .-flatux_sigreturn_to

/* Entries of the kernel's host signal handlers. The host hands a handler
 * the interrupted EFLAGS as they were, but for DF, TF and RF: a guest that
 * set AC (alignment check, which Linux enables for user mode) would make
 * the first misaligned access in kernel code a SIGBUS, so AC goes first.
 * The guest gets its own flags back from the frame at sigreturn. */
	.macro handler_entry name, target
	.globl \name
	.type \name, @function
\name:
	pushfq
	andl $~0x40000, (%rsp)
	popfq
	jmp \target
	.size \name, .-\name
	.endm
	handler_entry flatux_sigsys_entry, flatux_on_sigsys
	handler_entry flatux_kick_entry, flatux_on_kick
	handler_entry flatux_fault_entry, flatux_on_fault

/* Restorer for the kernel's own host signal handlers (SA_RESTORER). */
	.globl flatux_restorer
	.type flatux_restorer, @function
flatux_restorer:
	mov $15, %eax
	syscall
	ud2
	.size flatux_restorer, .-flatux_restorer

/* long flatux_clone_thread(unsigned long flags, void *stack_top, int *ctid,
 *                          unsigned long tls, void (*fn)(void *), void *arg)
 * A raw clone: the child runs fn(arg) on stack_top and then exits the host
 * thread. No libc thread state is created, on purpose. ctid is also the
 * parent_tid word, for CLONE_PARENT_SETTID: the host stores the new tid
 * there before the child runs, so the child's CLONE_CHILD_CLEARTID at exit
 * always comes after it. */
	.globl flatux_clone_thread
	.type flatux_clone_thread, @function
flatux_clone_thread:
	sub $16, %rsi
	mov %r8, 0(%rsi)
	mov %r9, 8(%rsi)
	mov %rdx, %r10         /* child_tid; %rdx stays: parent_tid */
	mov %rcx, %r8          /* tls */
.Lclone:
	mov $56, %eax          /* clone */
	syscall
	test %rax, %rax
	jnz 1f
	xor %ebp, %ebp
	pop %rax
	pop %rdi
	call *%rax
	mov $60, %eax          /* exit (this thread only) */
	xor %edi, %edi
	syscall
	ud2
1:	ret
	.size flatux_clone_thread, .-flatux_clone_thread

/* long flatux_clone_process(unsigned long flags, void *stack_top, int *pidfd,
 *                           void (*fn)(void *), void *arg)
 * The same without CLONE_VM: a copy of the whole host process (fork). The
 * child runs fn(arg) on stack_top, which must not be memory the parent
 * uses; *pidfd gets CLONE_PIDFD's descriptor when the flags ask for one. */
	.globl flatux_clone_process
	.type flatux_clone_process, @function
flatux_clone_process:
	sub $16, %rsi
	mov %rcx, 0(%rsi)
	mov %r8, 8(%rsi)
	xor %r10d, %r10d       /* child_tid */
	xor %r8d, %r8d         /* tls */
	jmp .Lclone
	.size flatux_clone_process, .-flatux_clone_process

/* void flatux_exit_thread_and_wake(void)  -- see task/exit.cpp.
 * Exits the host thread with no stack use after the syscall. */
	.globl flatux_exit_thread
	.type flatux_exit_thread, @function
flatux_exit_thread:
	mov $60, %eax
	syscall
	ud2
	.size flatux_exit_thread, .-flatux_exit_thread

/* long flatux_isyscall(const uint32_t *notify, long nr, long a1, long a2,
 *                      long a3, long a4, long a5, long a6)
 * A host syscall that a pending guest signal can interrupt. The kick
 * handler moves a thread whose RIP is in [window, done) to the EINTR exit,
 * so a signal that arrives after the check but before the syscall instruction
 * is not lost; one that arrives during the syscall makes it return -EINTR. */
	.globl flatux_isyscall, flatux_isyscall_window, flatux_isyscall_done, flatux_isyscall_eintr
	.type flatux_isyscall, @function
flatux_isyscall:
	mov %rdi, %r11
	mov %rsi, %rax
	mov %rdx, %rdi
	mov %rcx, %rsi
	mov %r8, %rdx
	mov %r9, %r10
	mov 8(%rsp), %r8
	mov 16(%rsp), %r9
flatux_isyscall_window:
	cmpl $0, (%r11)
	jne flatux_isyscall_eintr
	syscall
flatux_isyscall_done:
	ret
flatux_isyscall_eintr:
	mov $-4, %rax
	ret
	.size flatux_isyscall, .-flatux_isyscall

	.section .note.GNU-stack,"",@progbits
