// Vector and x87 registers in kernel code: the kernel flags forbid the
// compiler to use them (-mgeneral-regs-only), but inline assembly (or an
// object built without the flags) still can.
unsigned long spill_to_xmm(unsigned long v) {
  asm volatile("movq %0, %%xmm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\tfldz\n\tfstp %%st(0)" : : "r"(v) : "memory");
  return v;
}
