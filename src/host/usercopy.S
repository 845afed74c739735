/* The only code allowed to fault on a guest address. A fault with RIP in
 * [flatux_usercopy_begin, flatux_usercopy_end) resumes at
 * flatux_usercopy_fixup, which returns -1 from the leaf function that
 * faulted (none of them touch the stack). */
	.text
	.globl flatux_usercopy_begin, flatux_usercopy_end, flatux_usercopy_fixup
	.globl flatux_copy_raw, flatux_clear_raw, flatux_strnlen_raw

flatux_usercopy_begin:

/* size_t flatux_copy_raw(void *dst, const void *src, size_t n)
 * Up to 256 bytes (a struct stat, a path, a sockaddr: most of a syscall's
 * copies) in 8-byte moves, then bytes: `rep movsb`'s start-up costs more. */
	.type flatux_copy_raw, @function
flatux_copy_raw:
	cmp $256, %rdx
	ja 3f
	mov %rdx, %rcx
	shr $3, %rcx
	jz 5f
4:	mov (%rsi), %rax
	mov %rax, (%rdi)
	add $8, %rsi
	add $8, %rdi
	dec %rcx
	jnz 4b
5:	and $7, %edx
	jz 7f
6:	movzbl (%rsi), %eax
	mov %al, (%rdi)
	inc %rsi
	inc %rdi
	dec %edx
	jnz 6b
7:	xor %eax, %eax
	ret
3:	mov %rdx, %rcx
	rep movsb
	xor %eax, %eax
	ret
	.size flatux_copy_raw, .-flatux_copy_raw

/* size_t flatux_clear_raw(void *dst, size_t n) */
	.type flatux_clear_raw, @function
flatux_clear_raw:
	mov %rsi, %rcx
	xor %eax, %eax
	rep stosb
	ret
	.size flatux_clear_raw, .-flatux_clear_raw

/* long flatux_strnlen_raw(const char *s, size_t n) */
	.type flatux_strnlen_raw, @function
flatux_strnlen_raw:
	xor %eax, %eax
1:	cmp %rsi, %rax
	je 2f
	cmpb $0, (%rdi,%rax)
	je 2f
	inc %rax
	jmp 1b
2:	ret
	.size flatux_strnlen_raw, .-flatux_strnlen_raw

flatux_usercopy_end:

flatux_usercopy_fixup:
	mov $-1, %rax
	ret

	.section .note.GNU-stack,"",@progbits
