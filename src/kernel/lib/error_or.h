// A value or an errno, for kernel code that can fail (SerenityOS's ErrorOr
// shape): `ErrorOr<T*> find(...)` instead of `T* find(..., long* err)`.
//
//   ErrorOr<Segment*> s = lookup(ns, id);
//   if (s.is_error()) return s.error();
//   TRY(x, lookup(ns, id));          // declares x, or returns the errno
//   TRY_LONG(check_perm(...));       // a plain `long` result: < 0 returns it
#pragma once
#include <utility>

namespace flatux {

struct KError {
  long errno_value;  // negative, as syscalls return it
};

inline KError kerr(long negative_errno) { return KError{negative_errno}; }

template <typename T>
class [[nodiscard]] ErrorOr {
 public:
  ErrorOr(T v) : value_(std::move(v)), err_(0) {}  // NOLINT: implicit, as a return value
  ErrorOr(KError e) : value_(), err_(e.errno_value) {}
  bool is_error() const { return err_ != 0; }
  long error() const { return err_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T release_value() { return std::move(value_); }

 private:
  T value_;
  long err_;
};

}  // namespace flatux

// Declares `var` from an ErrorOr expression, or returns its errno (as a
// long, which every syscall-shaped caller returns).
#define TRY(var, expr)                               \
  auto var##_result_ = (expr);                       \
  if (var##_result_.is_error()) return var##_result_.error(); \
  auto var = var##_result_.release_value()

// For calls returning a negative errno or >= 0.
#define TRY_LONG(expr)            \
  do {                            \
    long try_r_ = (expr);         \
    if (try_r_ < 0) return try_r_; \
  } while (0)
