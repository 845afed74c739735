// Uses a function defined only in good_a.cpp: fine inside the kernel.
namespace sample {
int triple(int x);
int nine_times(int x) { return triple(triple(x)); }
}  // namespace sample
