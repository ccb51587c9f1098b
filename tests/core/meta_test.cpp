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
  return meta_cases::all_cases();
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
