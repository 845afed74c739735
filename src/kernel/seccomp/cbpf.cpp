#include "kernel/seccomp/cbpf.h"

#include <linux/errno.h>

namespace flatux {
namespace {

constexpr uint16_t op(uint16_t a, uint16_t b = 0, uint16_t c = 0) { return (uint16_t)(a | b | c); }

bool is_cond_jump(uint16_t code) {
  return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA;
}

// Every opcode of classic BPF, and whether a seccomp filter may use it
// (seccomp_check_filter's list; the loads it rewrites come on top).
struct Opcode {
  uint16_t code;
  bool seccomp;
};
constexpr Opcode kOpcodes[] = {
    {op(BPF_ALU, BPF_ADD, BPF_K), true},  {op(BPF_ALU, BPF_ADD, BPF_X), true},
    {op(BPF_ALU, BPF_SUB, BPF_K), true},  {op(BPF_ALU, BPF_SUB, BPF_X), true},
    {op(BPF_ALU, BPF_MUL, BPF_K), true},  {op(BPF_ALU, BPF_MUL, BPF_X), true},
    {op(BPF_ALU, BPF_DIV, BPF_K), true},  {op(BPF_ALU, BPF_DIV, BPF_X), true},
    {op(BPF_ALU, BPF_MOD, BPF_K), false}, {op(BPF_ALU, BPF_MOD, BPF_X), false},
    {op(BPF_ALU, BPF_AND, BPF_K), true},  {op(BPF_ALU, BPF_AND, BPF_X), true},
    {op(BPF_ALU, BPF_OR, BPF_K), true},   {op(BPF_ALU, BPF_OR, BPF_X), true},
    {op(BPF_ALU, BPF_XOR, BPF_K), true},  {op(BPF_ALU, BPF_XOR, BPF_X), true},
    {op(BPF_ALU, BPF_LSH, BPF_K), true},  {op(BPF_ALU, BPF_LSH, BPF_X), true},
    {op(BPF_ALU, BPF_RSH, BPF_K), true},  {op(BPF_ALU, BPF_RSH, BPF_X), true},
    {op(BPF_ALU, BPF_NEG), true},
    {op(BPF_LD, BPF_W, BPF_ABS), true},   {op(BPF_LD, BPF_H, BPF_ABS), false},
    {op(BPF_LD, BPF_B, BPF_ABS), false},  {op(BPF_LD, BPF_W, BPF_IND), false},
    {op(BPF_LD, BPF_H, BPF_IND), false},  {op(BPF_LD, BPF_B, BPF_IND), false},
    {op(BPF_LD, BPF_W, BPF_LEN), true},   {op(BPF_LDX, BPF_W, BPF_LEN), true},
    {op(BPF_LDX, BPF_B, BPF_MSH), false},
    {op(BPF_LD, BPF_IMM), true},          {op(BPF_LDX, BPF_IMM), true},
    {op(BPF_LD, BPF_MEM), true},          {op(BPF_LDX, BPF_MEM), true},
    {op(BPF_ST), true},                   {op(BPF_STX), true},
    {op(BPF_MISC, BPF_TAX), true},        {op(BPF_MISC, BPF_TXA), true},
    {op(BPF_RET, BPF_K), true},           {op(BPF_RET, BPF_A), true},
    {op(BPF_JMP, BPF_JA), true},
    {op(BPF_JMP, BPF_JEQ, BPF_K), true},  {op(BPF_JMP, BPF_JEQ, BPF_X), true},
    {op(BPF_JMP, BPF_JGE, BPF_K), true},  {op(BPF_JMP, BPF_JGE, BPF_X), true},
    {op(BPF_JMP, BPF_JGT, BPF_K), true},  {op(BPF_JMP, BPF_JGT, BPF_X), true},
    {op(BPF_JMP, BPF_JSET, BPF_K), true}, {op(BPF_JMP, BPF_JSET, BPF_X), true},
};

const Opcode* find_opcode(uint16_t code) {
  for (const Opcode& o : kOpcodes)
    if (o.code == code) return &o;
  return nullptr;
}

// Linux's bpf_check_classic: an opcode of classic BPF, with its operands
// in range, jumps inside the program, a RET at the end.
bool classic_ok(const sock_filter* prog, size_t len) {
  for (size_t pc = 0; pc < len; pc++) {
    const sock_filter& f = prog[pc];
    if (!find_opcode(f.code)) return false;
    switch (f.code) {
      case op(BPF_ALU, BPF_DIV, BPF_K): case op(BPF_ALU, BPF_MOD, BPF_K):
        if (f.k == 0) return false;
        break;
      case op(BPF_ALU, BPF_LSH, BPF_K): case op(BPF_ALU, BPF_RSH, BPF_K):
        if (f.k >= 32) return false;
        break;
      case op(BPF_LD, BPF_MEM): case op(BPF_LDX, BPF_MEM): case op(BPF_ST): case op(BPF_STX):
        if (f.k >= kBpfMemWords) return false;
        break;
      case op(BPF_JMP, BPF_JA):
        if (f.k >= len - pc - 1) return false;
        break;
      default:
        if (is_cond_jump(f.code) && (pc + f.jt + 1 >= len || pc + f.jf + 1 >= len)) return false;
    }
  }
  uint16_t last = prog[len - 1].code;
  return last == op(BPF_RET, BPF_K) || last == op(BPF_RET, BPF_A);
}

// Linux's check_load_and_stores: a scratch word is read only where every
// path to it has written it (jumps go forward only, so one pass does).
bool loads_follow_stores(const sock_filter* prog, size_t len) {
  uint16_t masks[kBpfMaxInsns];
  for (size_t i = 0; i < len; i++) masks[i] = 0xffff;
  uint16_t valid = 0;
  for (size_t pc = 0; pc < len; pc++) {
    const sock_filter& f = prog[pc];
    valid &= masks[pc];
    if (f.code == op(BPF_ST) || f.code == op(BPF_STX)) {
      valid |= (uint16_t)(1u << f.k);
    } else if (f.code == op(BPF_LD, BPF_MEM) || f.code == op(BPF_LDX, BPF_MEM)) {
      if (!(valid & (1u << f.k))) return false;
    } else if (f.code == op(BPF_JMP, BPF_JA)) {
      masks[pc + 1 + f.k] &= valid;
      valid = 0xffff;
    } else if (is_cond_jump(f.code)) {
      masks[pc + 1 + f.jt] &= valid;
      masks[pc + 1 + f.jf] &= valid;
      valid = 0xffff;
    }
  }
  return true;
}

// seccomp_check_filter: what a seccomp program may use of classic BPF
// (no packet loads, no MOD, no MSH), its loads 32-bit and aligned inside
// seccomp_data; BPF_LEN becomes that size.
bool seccomp_subset(sock_filter* prog, size_t len) {
  for (size_t pc = 0; pc < len; pc++) {
    sock_filter& f = prog[pc];
    const Opcode* o = find_opcode(f.code);
    if (!o || !o->seccomp) return false;
    if (f.code == op(BPF_LD, BPF_W, BPF_ABS) && (f.k >= sizeof(seccomp_data) || (f.k & 3))) return false;
    if (f.code == op(BPF_LD, BPF_W, BPF_LEN) || f.code == op(BPF_LDX, BPF_W, BPF_LEN)) {
      f.code = op(BPF_CLASS(f.code), BPF_IMM);
      f.k = sizeof(seccomp_data);
    }
  }
  return true;
}

uint32_t load_word(const seccomp_data& data, uint32_t off) {
  uint32_t v;
  __builtin_memcpy(&v, reinterpret_cast<const char*>(&data) + off, sizeof v);
  return v;
}

}  // namespace

long cbpf_check_seccomp(sock_filter* prog, size_t len) {
  if (len == 0 || len > kBpfMaxInsns) return -EINVAL;
  if (!classic_ok(prog, len) || !loads_follow_stores(prog, len) || !seccomp_subset(prog, len)) return -EINVAL;
  return 0;
}

uint32_t cbpf_run(const sock_filter* prog, size_t len, const seccomp_data& data) {
  uint32_t a = 0, x = 0, mem[kBpfMemWords] = {};
  for (size_t pc = 0; pc < len; pc++) {
    const sock_filter& f = prog[pc];
    uint32_t src = BPF_SRC(f.code) == BPF_X ? x : f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        switch (BPF_MODE(f.code)) {
          case BPF_ABS: a = load_word(data, f.k); break;
          case BPF_IMM: a = f.k; break;
          case BPF_MEM: a = mem[f.k]; break;
        }
        break;
      case BPF_LDX: x = BPF_MODE(f.code) == BPF_MEM ? mem[f.k] : f.k; break;
      case BPF_ST: mem[f.k] = a; break;
      case BPF_STX: mem[f.k] = x; break;
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) x = a;
        else a = x;
        break;
      case BPF_RET: return BPF_RVAL(f.code) == BPF_A ? a : f.k;
      case BPF_ALU:
        switch (BPF_OP(f.code)) {
          case BPF_ADD: a += src; break;
          case BPF_SUB: a -= src; break;
          case BPF_MUL: a *= src; break;
          case BPF_DIV:
            if (src == 0) return 0;  // as Linux: a division by X == 0 ends the program with 0
            a /= src;
            break;
          case BPF_AND: a &= src; break;
          case BPF_OR: a |= src; break;
          case BPF_XOR: a ^= src; break;
          case BPF_LSH: a <<= (src & 31); break;
          case BPF_RSH: a >>= (src & 31); break;
          case BPF_NEG: a = -a; break;
        }
        break;
      case BPF_JMP: {
        if (BPF_OP(f.code) == BPF_JA) {
          pc += f.k;
          break;
        }
        bool taken = false;
        switch (BPF_OP(f.code)) {
          case BPF_JEQ: taken = a == src; break;
          case BPF_JGT: taken = a > src; break;
          case BPF_JGE: taken = a >= src; break;
          case BPF_JSET: taken = (a & src) != 0; break;
        }
        pc += taken ? f.jt : f.jf;
        break;
      }
    }
  }
  return 0;  // not reached by a checked program: it ends in RET
}

}  // namespace flatux
