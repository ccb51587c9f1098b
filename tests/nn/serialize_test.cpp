// .npz state dicts: round trips of every dtype and of modules, the bytes of the
// .npy header, reading archives built here by hand (a tiny zip writer: stored
// and deflate-"stored block" members, .npy 1.0 and 2.0 headers), and the errors.
#include <gtest/gtest.h>
#include <tessera/autograd.h>
#include <tessera/nn.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tessera;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("tessera_nn_test_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// ---- a minimal zip writer (PKWARE APPNOTE 4.3), independent of libzip ----
uint32_t crc32(const std::string& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}
void put16(std::string& s, uint32_t v) {
  s += char(v & 0xff);
  s += char((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
struct Member {
  std::string name, data;
  bool deflate = false;  // method 8 with one uncompressed deflate block
};
std::string make_zip(const std::vector<Member>& members) {
  std::string out, central;
  for (const Member& m : members) {
    std::string payload = m.data;
    if (m.deflate) {  // BFINAL=1, BTYPE=00, LEN, NLEN, raw bytes (RFC 1951 3.2.4)
      payload = std::string(1, '\x01');
      put16(payload, uint32_t(m.data.size()));
      put16(payload, uint32_t(~m.data.size() & 0xffff));
      payload += m.data;
    }
    const uint32_t offset = uint32_t(out.size()), crc = crc32(m.data);
    const uint32_t method = m.deflate ? 8 : 0;
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);
    put16(out, method);
    put16(out, 0);
    put16(out, 0x21);
    put32(out, crc);
    put32(out, uint32_t(payload.size()));
    put32(out, uint32_t(m.data.size()));
    put16(out, uint32_t(m.name.size()));
    put16(out, 0);
    out += m.name + payload;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, method);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, uint32_t(payload.size()));
    put32(central, uint32_t(m.data.size()));
    put16(central, uint32_t(m.name.size()));
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, offset);
    central += m.name;
  }
  const uint32_t cd_offset = uint32_t(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, uint32_t(members.size()));
  put16(out, uint32_t(members.size()));
  put32(out, uint32_t(central.size()));
  put32(out, cd_offset);
  put16(out, 0);
  return out;
}

// A .npy file with header dict `dict`, version `major`.0, then `data`.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  if (major == 1)
    put16(out, uint32_t(h.size()));
  else
    put32(out, uint32_t(h.size()));
  return out + h + data;
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string load_error(const std::string& path) {
  try {
    load(path);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}

// ---- round trips ----

TEST(Npz, RoundTripsEveryDtypeAndShape) {
  TempDir dir;
  StateDict sd;
  const Tensor base = arange(-6, 6, 1, kDouble).view({3, 4}) * 0.75;
  for (ScalarType t : {kFloat, kDouble, kHalf, kByte, kChar, kShort, kInt, kLong}) {
    const Tensor v = t == kByte ? base.abs().to(t) : base.to(t);
    sd.insert(std::string("m.") + std::string(dtype_name(t)), v);
  }
  sd.insert("flags", base.gt(0));
  sd.insert("scalar", scalar_tensor(3.5, kDouble));
  sd.insert("empty", zeros({0, 3}));
  sd.insert("view", base.t());  // not contiguous: written as its values
  const std::string path = dir.file("all.npz");
  save(path, sd);
  const StateDict back = load(path);
  ASSERT_EQ(back.keys(), sd.keys());
  for (const auto& [key, t] : sd) {
    const Tensor& b = back.at(key);
    EXPECT_EQ(b.scalar_type(), t.scalar_type()) << key;
    EXPECT_EQ(b.sizes().vec(), t.sizes().vec()) << key;
    EXPECT_TRUE(equal(b, t)) << key;
    EXPECT_EQ(b.device().type_name(), "cpu");
  }
}

TEST(Npz, Bfloat16IsStoredAsFloat32Exactly) {
  TempDir dir;
  const Tensor b = (arange(0, 10, 1, kFloat) * 0.3 - 1.0).to(kBFloat16);
  save(dir.file("b.npz"), {{"w", b}});
  const Tensor back = load(dir.file("b.npz")).at("w");
  EXPECT_EQ(back.scalar_type(), kFloat);
  EXPECT_TRUE(equal(back.to(kBFloat16), b));
  EXPECT_TRUE(equal(back, b.to(kFloat)));
}

TEST(Npz, HeaderBytesAreNumpyFormat1) {
  TempDir dir;
  save(dir.file("h.npz"), {{"fc.weight", zeros({2, 3})}, {"v", zeros({5}, kLong)}, {"s", scalar_tensor(1.0)}});
  const std::string bytes = read_bytes(dir.file("h.npz"));
  auto header_of = [&](const std::string& dict_start) {
    const size_t at = bytes.find(dict_start);
    EXPECT_NE(at, std::string::npos) << dict_start;
    if (at == std::string::npos) return std::string();
    // The 10 bytes before the dict: magic, version 1.0, little-endian length.
    EXPECT_EQ(bytes.substr(at - 10, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t len = uint8_t(bytes[at - 2]) | (size_t(uint8_t(bytes[at - 1])) << 8);
    EXPECT_EQ((10 + len) % 64, 0u) << "data must start 64-byte aligned";
    const std::string h = bytes.substr(at, len);
    EXPECT_EQ(h.back(), '\n');
    return h.substr(0, h.find_last_not_of(" \n") + 1);
  };
  EXPECT_EQ(header_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(header_of("{'descr': '<i8'"), "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }");
  EXPECT_EQ(header_of("{'descr': '<f4', 'fortran_order': False, 'shape': ()"),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
  // Member names are the keys plus ".npy", stored in order.
  EXPECT_LT(bytes.find("fc.weight.npy"), bytes.find("v.npy"));
}

TEST(Npz, EmptyStateDictRoundTrips) {
  TempDir dir;
  save(dir.file("e.npz"), StateDict());
  EXPECT_TRUE(load(dir.file("e.npz")).empty());
}

TEST(Npz, ModuleStateDictRoundTripThroughAFile) {
  TempDir dir;
  manual_seed(1);
  nn::Sequential a{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::ReLU>(),
                   std::make_shared<nn::LayerNorm>(std::vector<int64_t>{8}), std::make_shared<nn::Linear>(8, 3)};
  manual_seed(2);
  nn::Sequential b{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::ReLU>(),
                   std::make_shared<nn::LayerNorm>(std::vector<int64_t>{8}), std::make_shared<nn::Linear>(8, 3)};
  const Tensor x = randn({5, 2});
  autograd::NoGradGuard no_grad;  // forward values only
  ASSERT_FALSE(equal(a.forward(x), b.forward(x)));
  save(dir.file("m.npz"), a.state_dict());
  b.load_state_dict(load(dir.file("m.npz")));
  for (const auto& [name, p] : a.named_parameters()) {
    const auto named_b = b.named_parameters();
    const auto it = std::find_if(named_b.begin(), named_b.end(), [&](const auto& kv) { return kv.first == name; });
    ASSERT_NE(it, named_b.end()) << name;
    EXPECT_TRUE(equal(it->second, p)) << name;
  }
  EXPECT_TRUE(equal(a.forward(x), b.forward(x)));
}

TEST(Npz, Bfloat16ModuleLoadsBackIntoBfloat16) {
  TempDir dir;
  nn::Linear a(4, 3, true, kBFloat16, Generator(1));
  nn::Linear b(4, 3, true, kBFloat16, Generator(2));
  save(dir.file("bf.npz"), a.state_dict());
  EXPECT_EQ(load(dir.file("bf.npz")).at("weight").scalar_type(), kFloat);
  b.load_state_dict(load(dir.file("bf.npz")));
  EXPECT_EQ(b.weight().scalar_type(), kBFloat16);
  EXPECT_TRUE(equal(b.weight(), a.weight()));
  EXPECT_TRUE(equal(b.bias(), a.bias()));
}

// ---- archives written by hand ----

TEST(Npz, ReadsHandWrittenArchivesStoredAndDeflatedVersion1And2) {
  TempDir dir;
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string data = f32_bytes({1.0f, -2.5f, 3.25f, 0.0f});
  const std::string path = dir.file("hand.npz");
  write_bytes(path, make_zip({{"a.npy", make_npy(dict, data)},
                              {"b.npy", make_npy(dict, data, 2), /*deflate=*/true},
                              {"c.npy", make_npy("{\"descr\":\"|u1\",\"shape\":(3,),\"fortran_order\":False}",
                                                 std::string("\x01\x02\xff", 3), 3)}}));
  const StateDict sd = load(path);
  ASSERT_EQ(sd.keys(), (std::vector<std::string>{"a", "b", "c"}));
  const Tensor want = tensor({1.0f, -2.5f, 3.25f, 0.0f}).view({2, 2});
  EXPECT_TRUE(equal(sd.at("a"), want));
  EXPECT_TRUE(equal(sd.at("b"), want));
  EXPECT_TRUE(equal(sd.at("c"), tensor({1, 2, 255}).to(kByte)));
}

TEST(Npz, ErrorsNameTheFileAndMember) {
  TempDir dir;
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = f32_bytes({1.0f, 2.0f});
  struct Case {
    const char* what;
    std::string npy;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"fortran", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data), "Fortran order"},
      {"big-endian", make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data),
       "unsupported dtype '>f4'"},
      {"complex", make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data),
       "unsupported dtype '<c8'"},
      {"magic", "NOTNUMPY" + data, "not a .npy file"},
      {"version", make_npy(good_dict, data, 7), "unsupported .npy format version 7"},
      {"truncated data", make_npy(good_dict, data.substr(0, 5)), "the data is shorter"},
      {"bad dict", make_npy("{'descr': '<f4', 'shape': (2,", data), "bad .npy header"},
      {"no shape", make_npy("{'descr': '<f4', 'fortran_order': False}", data), "lacks 'shape'"},
      // The shape rule of every new tensor (checked_math.h), before anything is allocated:
      // 2**32 * 2**32 elements, and an empty shape whose other sizes (0 counted as 1) pass 2**63 bytes.
      {"numel overflow", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", data),
       "more elements than int64 can count"},
      {"empty beyond bytes",
       make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 0), }", ""),
       "more than int64 can index"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file(std::string(c.what) + ".npz");
    write_bytes(path, make_zip({{"w.npy", c.npy}}));
    const std::string msg = load_error(path);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find("member 'w.npy'"), std::string::npos) << c.what << ": " << msg;
  }
  // Not .npy members, not a zip, no file.
  write_bytes(dir.file("other.npz"), make_zip({{"readme.txt", "hello"}}));
  EXPECT_NE(load_error(dir.file("other.npz")).find("'readme.txt' is not a .npy file"), std::string::npos);
  write_bytes(dir.file("text.npz"), "this is not a zip archive at all");
  EXPECT_NE(load_error(dir.file("text.npz")).find("not a zip archive"), std::string::npos);
  const std::string missing = load_error(dir.file("missing.npz"));
  EXPECT_NE(missing.find("no such file"), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing.npz"), std::string::npos) << missing;
  fs::create_directories(dir.file("folder.npz"));
  EXPECT_NE(load_error(dir.file("folder.npz")).find("is a directory"), std::string::npos);
  // Saving: a key that cannot be a member name, an unwritable path.
  EXPECT_THROW(save(dir.file("x.npz"), {{"a/b", ones({1})}}), ValueError);
  EXPECT_THROW(save(dir.file("no/such/dir/x.npz"), {{"a", ones({1})}}), ValueError);
}

TEST(Npz, SaveReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.file("r.npz");
  save(path, {{"a", ones({3})}, {"b", ones({1})}});
  save(path, {{"c", zeros({2})}});
  EXPECT_EQ(load(path).keys(), std::vector<std::string>{"c"});
}

TEST(StateDictTest, OrderedMapBehaviour) {
  StateDict sd;
  sd.insert("b", ones({1}));
  sd.insert("a", zeros({1}));
  sd.insert("b", zeros({2}));  // replaced in place, position kept
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(sd.at("b").numel(), 2);
  EXPECT_TRUE(sd.erase("b"));
  EXPECT_FALSE(sd.erase("b"));
  EXPECT_EQ(sd.keys(), std::vector<std::string>{"a"});
  EXPECT_TRUE(sd.contains("a"));
  EXPECT_THROW(sd.at("zz"), ValueError);
  EXPECT_THROW(sd.insert("", ones({1})), ValueError);
  EXPECT_THROW(sd.insert("u", Tensor()), ValueError);
}

}  // namespace
