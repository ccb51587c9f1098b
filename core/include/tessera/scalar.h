// tessera/scalar.h — a number argument (bool, integer or floating), like at::Scalar.
#pragma once

#include <tessera/dtype.h>

#include <cstdint>
#include <ostream>
#include <type_traits>

namespace tessera {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool) { v_.b = v; }  // NOLINT: implicit by design
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) {  // NOLINT
    v_.i = static_cast<int64_t>(v);
  }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float) {  // NOLINT
    v_.d = static_cast<double>(v);
  }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }

  double to_double() const { return kind_ == Kind::Float ? v_.d : kind_ == Kind::Int ? double(v_.i) : double(v_.b); }
  /// The integer value; a float truncates toward zero, saturating at int64's
  /// limits, NaN giving 0 (the CPU plugin's conversion rule; never UB).
  int64_t to_long() const { return kind_ == Kind::Int ? v_.i : kind_ == Kind::Float ? float_to_long(v_.d) : int64_t(v_.b); }
  bool to_bool() const { return kind_ == Kind::Bool ? v_.b : kind_ == Kind::Int ? v_.i != 0 : v_.d != 0.0; }

  /// The dtype a tensor made from this scalar gets: bool, int64 or the default float.
  ScalarType default_dtype() const { return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kLong : kDefaultFloat; }

 private:
  static int64_t float_to_long(double d) {
    if (!(d == d)) return 0;
    if (d >= 0x1p63) return INT64_MAX;
    if (d < -0x1p63) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  Kind kind_;
  union {
    bool b;
    int64_t i;
    double d;
  } v_;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace tessera
