// The classic BPF machine and checks behind guest seccomp filters.
#include "kernel/seccomp/cbpf.h"

#include <gtest/gtest.h>
#include <linux/errno.h>

#include <cstddef>
#include <vector>

using namespace flatux;

namespace {

sock_filter stmt(uint16_t code, uint32_t k) { return sock_filter{code, 0, 0, k}; }
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { return sock_filter{code, jt, jf, k}; }

seccomp_data data_for(int nr, uint64_t arg0 = 0) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = 0xc000003e;
  d.instruction_pointer = 0x7fff12345678;
  d.args[0] = arg0;
  return d;
}

uint32_t run(std::vector<sock_filter> p, const seccomp_data& d) {
  EXPECT_EQ(cbpf_check_seccomp(p.data(), p.size()), 0);
  return cbpf_run(p.data(), p.size(), d);
}

long check(std::vector<sock_filter> p) { return cbpf_check_seccomp(p.data(), p.size()); }

}  // namespace

TEST(Cbpf, LoadsTheSyscallsData) {
  auto nr = stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  EXPECT_EQ(run({nr, stmt(BPF_RET | BPF_A, 0)}, data_for(39)), 39u);
  auto ip_hi = stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer) + 4);
  EXPECT_EQ(run({ip_hi, stmt(BPF_RET | BPF_A, 0)}, data_for(0)), 0x7fffu);
  auto len = stmt(BPF_LD | BPF_W | BPF_LEN, 0);
  EXPECT_EQ(run({len, stmt(BPF_RET | BPF_A, 0)}, data_for(0)), sizeof(seccomp_data));
  auto xlen = stmt(BPF_LDX | BPF_W | BPF_LEN, 0);
  EXPECT_EQ(run({xlen, stmt(BPF_MISC | BPF_TXA, 0), stmt(BPF_RET | BPF_A, 0)}, data_for(0)), 64u);
}

TEST(Cbpf, ArithmeticIsThirtyTwoBit) {
  std::vector<sock_filter> p = {
      stmt(BPF_LD | BPF_IMM, 0xfffffff0), stmt(BPF_ALU | BPF_ADD | BPF_K, 0x20),  // wraps to 0x10
      stmt(BPF_LDX | BPF_IMM, 3), stmt(BPF_ALU | BPF_MUL | BPF_X, 0),            // 0x30
      stmt(BPF_ALU | BPF_RSH | BPF_K, 4),                                          // 3
      stmt(BPF_LDX | BPF_IMM, 33), stmt(BPF_ALU | BPF_LSH | BPF_X, 0),            // shift by 33 & 31: 6
      stmt(BPF_ALU | BPF_NEG, 0), stmt(BPF_ALU | BPF_XOR | BPF_K, 0xffffffff),    // -6 ^ ~0 = 5
      stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(run(p, data_for(0)), 5u);
}

TEST(Cbpf, DivisionByZeroEndsWithZero) {
  std::vector<sock_filter> p = {stmt(BPF_LD | BPF_IMM, 7), stmt(BPF_LDX | BPF_IMM, 0),
                                stmt(BPF_ALU | BPF_DIV | BPF_X, 0), stmt(BPF_RET | BPF_K, 0x7fff0000)};
  EXPECT_EQ(run(p, data_for(0)), 0u);  // SECCOMP_RET_KILL_THREAD
}

TEST(Cbpf, JumpsAndScratchMemory) {
  auto nr = stmt(BPF_LD | BPF_W | BPF_ABS, 0);
  std::vector<sock_filter> p = {
      nr,
      stmt(BPF_ST, 5),
      jump(BPF_JMP | BPF_JGT | BPF_K, 100, 0, 2),
      stmt(BPF_LD | BPF_IMM, 1),
      stmt(BPF_JMP | BPF_JA, 1),
      stmt(BPF_LD | BPF_IMM, 2),
      stmt(BPF_MISC | BPF_TAX, 0),
      stmt(BPF_LD | BPF_MEM, 5),
      jump(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
      stmt(BPF_ALU | BPF_OR | BPF_K, 0x1000),
      stmt(BPF_ALU | BPF_ADD | BPF_X, 0),
      stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(run(p, data_for(101)), 101u + 0x1000 + 1);  // odd: JSET taken; > 100
  EXPECT_EQ(run(p, data_for(4)), 4u + 2);                // even; not > 100
}

TEST(Cbpf, RefusesWhatLinuxRefuses) {
  auto ret = stmt(BPF_RET | BPF_K, 0);
  EXPECT_EQ(check({}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_LD | BPF_IMM, 0)}), -EINVAL);                          // no RET at the end
  EXPECT_EQ(check({stmt(BPF_LD | BPF_W | BPF_ABS, 64), ret}), -EINVAL);            // past seccomp_data
  EXPECT_EQ(check({stmt(BPF_LD | BPF_W | BPF_ABS, 6), ret}), -EINVAL);             // unaligned
  EXPECT_EQ(check({stmt(BPF_LD | BPF_B | BPF_ABS, 0), ret}), -EINVAL);             // packet loads
  EXPECT_EQ(check({stmt(BPF_LD | BPF_W | BPF_IND, 0), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_LDX | BPF_B | BPF_MSH, 0), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_ALU | BPF_MOD | BPF_K, 2), ret}), -EINVAL);            // not for seccomp
  EXPECT_EQ(check({stmt(BPF_ALU | BPF_DIV | BPF_K, 0), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_ALU | BPF_RSH | BPF_K, 32), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_ST, 16), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(BPF_LDX | BPF_MEM, 0), ret}), -EINVAL);                    // read before written
  EXPECT_EQ(check({stmt(BPF_JMP | BPF_JA, 1), ret}), -EINVAL);                     // past the end
  EXPECT_EQ(check({jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), ret}), -EINVAL);
  EXPECT_EQ(check({stmt(0xffff, 0), ret}), -EINVAL);
  std::vector<sock_filter> big(kBpfMaxInsns + 1, ret);
  EXPECT_EQ(check(big), -EINVAL);
  big.pop_back();
  EXPECT_EQ(check(big), 0);
}
