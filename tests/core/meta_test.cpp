// Every op runs on meta tensors: same inputs on meta and on cpu must give outputs
// of the same shapes and dtypes. A new op without a case here fails the test.
#include <gtest/gtest.h>
#include <tessera/tessera.h>

#include <functional>
#include <map>

#include "meta_cases.h"

using namespace tessera;

namespace {

using Case = std::function<std::vector<Tensor>(Device)>;

TensorOptions on(Device d, ScalarType t = kFloat) { return TensorOptions(t).device(d); }

std::map<std::string, std::vector<Case>> cases() {
  std::map<std::string, std::vector<Case>> c;
  auto binary = [](auto fn) {
    return std::vector<Case>{
        [fn](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d)), ones({3}, on(d, kInt)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({4, 1}, on(d, kByte)), ones({1, 5}, on(d, kChar)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({2}, on(d, kHalf)), ones({2}, on(d, kBFloat16)))}; },
        [fn](Device d) { return std::vector<Tensor>{fn(ones({0, 2}, on(d, kLong)), ones({2}, on(d, kLong)))}; }};
  };
  c["add"] = binary([](const Tensor& a, const Tensor& b) { return add(a, b); });
  c["sub"] = binary([](const Tensor& a, const Tensor& b) { return sub(a, b); });
  c["mul"] = binary([](const Tensor& a, const Tensor& b) { return mul(a, b); });
  c["div"] = binary([](const Tensor& a, const Tensor& b) { return div(a, b); });
  c["div"].push_back([](Device d) { return std::vector<Tensor>{div(ones({3}, on(d, kInt)), ones({3}, on(d, kInt)), "floor")}; });
  auto inplace = [](auto fn) {
    return std::vector<Case>{[fn](Device d) {
      Tensor a = ones({2, 3}, on(d, kDouble));
      fn(a, ones({3}, on(d)));
      return std::vector<Tensor>{a};
    }};
  };
  c["add_"] = inplace([](Tensor& a, const Tensor& b) { a.add_(b); });
  c["sub_"] = inplace([](Tensor& a, const Tensor& b) { a.sub_(b); });
  c["mul_"] = inplace([](Tensor& a, const Tensor& b) { a.mul_(b); });
  c["div_"] = inplace([](Tensor& a, const Tensor& b) { a.div_(b); });
  auto unary = [](auto fn) {
    return std::vector<Case>{[fn](Device d) { return std::vector<Tensor>{fn(ones({2, 3}, on(d)))}; },
                             [fn](Device d) { return std::vector<Tensor>{fn(ones({4}, on(d, kInt)))}; },
                             [fn](Device d) { return std::vector<Tensor>{fn(ones({}, on(d, kHalf)))}; }};
  };
  c["neg"] = unary([](const Tensor& a) { return neg(a); });
  c["exp"] = unary([](const Tensor& a) { return exp(a); });
  c["relu"] = unary([](const Tensor& a) { return relu(a); });
  c["neg_"] = inplace([](Tensor& a, const Tensor&) { a.neg_(); });
  c["exp_"] = inplace([](Tensor& a, const Tensor&) { a.exp_(); });
  c["relu_"] = inplace([](Tensor& a, const Tensor&) { a.relu_(); });
  c["sum"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).sum()}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d, kInt)).sum({0, 2}, true)}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d, kBool)).sum({-1})}; },
              [](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).sum({1}, false, kDouble)}; }};
  c["mm"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3}, on(d)).mm(ones({3, 5}, on(d)))}; }};
  c["bmm"] = {[](Device d) { return std::vector<Tensor>{ones({4, 2, 3}, on(d, kDouble)).bmm(ones({4, 3, 5}, on(d, kDouble)))}; }};
  c["matmul"] = {[](Device d) { return std::vector<Tensor>{ones({3}, on(d)).matmul(ones({3}, on(d)))}; },
                 [](Device d) { return std::vector<Tensor>{ones({2, 1, 3, 4}, on(d)).matmul(ones({5, 4, 2}, on(d)))}; },
                 [](Device d) { return std::vector<Tensor>{ones({4}, on(d)).matmul(ones({3, 4, 2}, on(d)))}; }};
  c["copy_"] = {[](Device d) {
    Tensor a = empty({2, 3}, on(d, kHalf));
    a.copy_(ones({3}, on(d, kLong)));
    return std::vector<Tensor>{a};
  }};
  c["fill_"] = {[](Device d) { return std::vector<Tensor>{empty({3}, on(d, kInt)).fill_(2.5)}; }};
  c["arange"] = {[](Device d) { return std::vector<Tensor>{arange(0, 10, 3, TensorOptions().device(d))}; },
                 [](Device d) { return std::vector<Tensor>{arange(0.0, 1.0, 0.1, TensorOptions().device(d))}; }};
  c["empty"] = {[](Device d) { return std::vector<Tensor>{empty({2, 0, 3}, on(d, kBool))}; }};
  c["view"] = {[](Device d) { return std::vector<Tensor>{ones({6}, on(d)).view({2, -1})}; }};
  c["reshape"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d)).t().reshape({12})}; }};
  c["transpose"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).transpose(0, 2)}; }};
  c["permute"] = {[](Device d) { return std::vector<Tensor>{ones({2, 3, 4}, on(d)).permute({1, 2, 0})}; }};
  c["narrow"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).narrow(0, 1, 3)}; }};
  c["slice"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).slice(0, 1, 5, 2)}; }};
  c["select"] = {[](Device d) { return std::vector<Tensor>{ones({5, 3}, on(d)).select(1, -1)}; }};
  c["squeeze"] = {[](Device d) { return std::vector<Tensor>{ones({1, 3, 1}, on(d)).squeeze()}; }};
  c["squeeze.dim"] = {[](Device d) { return std::vector<Tensor>{ones({1, 3, 1}, on(d)).squeeze(2)}; }};
  c["unsqueeze"] = {[](Device d) { return std::vector<Tensor>{ones({3}, on(d)).unsqueeze(0)}; }};
  c["expand"] = {[](Device d) { return std::vector<Tensor>{ones({3, 1}, on(d)).expand({2, 3, 4})}; }};
  c["as_strided"] = {[](Device d) { return std::vector<Tensor>{ones({6}, on(d)).as_strided({2, 2}, {1, 2})}; }};
  c["contiguous"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d)).t().contiguous()}; }};
  c["clone"] = {[](Device d) { return std::vector<Tensor>{ones({3, 4}, on(d, kBFloat16)).clone()}; }};
  using namespace meta_cases;
  add_unary_cases(c);
  add_binary_cases(c);
  add_ternary_cases(c);
  add_reduction_cases(c);
  add_linalg_cases(c);
  add_shape_cases(c);
  add_indexing_cases(c);
  add_random_cases(c);
  add_nn_cases(c);
  return c;
}

// Ops whose output shape depends on the data cannot run on meta.
const char* kShapeFromData[] = {"nonzero", "masked_select"};

}  // namespace

TEST(Meta, EveryOpMatchesCpuShapesAndDtypes) {
  const auto table = cases();
  const Device cpu("cpu"), meta("meta");
  for (const Operator* op : Dispatcher::instance().operators()) {
    SCOPED_TRACE(op->name());
    if (std::find(std::begin(kShapeFromData), std::end(kShapeFromData), op->name()) != std::end(kShapeFromData)) {
      EXPECT_THROW(ones({3}, on(meta)).nonzero(), NotImplementedError);
      continue;
    }
    auto it = table.find(op->name());
    if (it == table.end()) {
      ADD_FAILURE() << "op '" << op->name() << "' has no meta-versus-cpu case (meta_test.cpp, meta_cases_*.cpp)";
      continue;
    }
    for (size_t i = 0; i < it->second.size(); ++i) {
      SCOPED_TRACE("case " + std::to_string(i));
      const auto on_cpu = it->second[i](cpu);
      const auto on_meta = it->second[i](meta);
      ASSERT_EQ(on_cpu.size(), on_meta.size());
      for (size_t k = 0; k < on_cpu.size(); ++k) {
        EXPECT_EQ(on_meta[k].sizes().vec(), on_cpu[k].sizes().vec());
        EXPECT_EQ(on_meta[k].scalar_type(), on_cpu[k].scalar_type());
        EXPECT_EQ(on_meta[k].device(), meta);
        EXPECT_EQ(on_meta[k].data_ptr(), nullptr);  // no memory on meta
      }
    }
  }
}

TEST(Meta, HugeTensorsCostNoMemory) {
  const Tensor big = empty({1 << 20, 1 << 20}, on(Device("meta")));
  const Tensor r = big.matmul(big).sum({0});
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{1 << 20}));
  EXPECT_EQ(big.storage()->nbytes(), size_t(1) << 42);
}

TEST(Meta, ConvertToAndFromMeta) {
  const Tensor c = arange(6, kFloat).view({2, 3});
  const Tensor m = c.to(Device("meta"));
  EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.device().type_name(), "meta");
  EXPECT_THROW(m.cpu(), ValueError);
}
