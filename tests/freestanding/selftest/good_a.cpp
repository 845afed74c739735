// Clean kernel code: pure mem*/str* calls, constant tables (one of them
// holds pointers, so it lands in .data.rel.ro), and a definition that
// good_b.cpp uses, so the check must resolve references across objects.
#include <cstddef>
#include <cstring>

namespace sample {
int triple(int x) { return 3 * x; }

static const char* const kNames[] = {"read", "write", "open"};
static const int kNumbers[] = {0, 1, 2};

size_t name_len(int i) { return strlen(kNames[i % 3]) + kNumbers[i % 3]; }
void copy(void* dst, const void* src, size_t n) { memmove(dst, src, n); }
}  // namespace sample
