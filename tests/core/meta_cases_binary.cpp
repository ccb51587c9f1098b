// Meta-versus-cpu cases of the binary ops.
#include "meta_cases.h"

namespace tessera::meta_cases {

void add_binary_cases(CaseMap& c) {
  // Promotion, broadcasting, a number operand and a zero-size shape for each op.
  auto binary = [](auto fn, ScalarType a = kFloat, ScalarType b = kInt) {
    return std::vector<Case>{
        [fn, a, b](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d, a)), ones({3}, on(d, b)))}; },
        [fn, b](Device d) { return std::vector<Tensor>{fn(ones({4, 1}, on(d, b)), ones({1, 5}, on(d, kLong)))}; },
        [fn, a](Device d) { return std::vector<Tensor>{fn(ones({0, 2}, on(d, a)), ones({2}, on(d, a)))}; },
        [fn, a](Device d) { return std::vector<Tensor>{fn(ones({}, on(d, a)), ones({}, on(d, a)))}; }};
  };
  auto inplace = [](auto fn, ScalarType a = kDouble, ScalarType b = kFloat) {
    return std::vector<Case>{[fn, a, b](Device d) {
      Tensor x = ones({2, 3}, on(d, a));
      fn(x, ones({3}, on(d, b)));
      return std::vector<Tensor>{x};
    }};
  };
#define TSR_CASES(fn, A, B, IA, IB)                                                                     \
  c[#fn] = binary([](const Tensor& x, const Tensor& y) { return fn(x, y); }, A, B);                     \
  c[#fn].push_back([](Device d) { return std::vector<Tensor>{fn(ones({3}, on(d, A)), Scalar(2))}; });  \
  c[#fn "_"] = inplace([](Tensor& x, const Tensor& y) { x.fn##_(y); }, IA, IB);
  TSR_CASES(remainder, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(fmod, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(pow, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(atan2, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(maximum, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(minimum, kHalf, kBFloat16, kDouble, kFloat)
  TSR_CASES(eq, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(ne, kFloat, kInt, kInt, kFloat)
  TSR_CASES(lt, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(le, kByte, kChar, kDouble, kFloat)
  TSR_CASES(gt, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(ge, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(logical_and, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(logical_or, kFloat, kBool, kInt, kFloat)
  TSR_CASES(logical_xor, kFloat, kInt, kDouble, kFloat)
  TSR_CASES(bitwise_and, kInt, kLong, kLong, kInt)
  TSR_CASES(bitwise_or, kBool, kByte, kLong, kInt)
  TSR_CASES(bitwise_xor, kShort, kChar, kLong, kInt)
  TSR_CASES(bitwise_left_shift, kInt, kLong, kLong, kInt)
  TSR_CASES(bitwise_right_shift, kByte, kChar, kLong, kInt)
#undef TSR_CASES
}

}  // namespace tessera::meta_cases
