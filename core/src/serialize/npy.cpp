// The NumPy .npy header (see npy.h). The header is the repr of a Python dict
// {'descr': ..., 'fortran_order': ..., 'shape': (...)}: a small literal parser
// reads it (strings, True/False, integers, tuples), not a full Python parser.
#include "npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

namespace tessera::npy {
namespace {

static_assert(std::endian::native == std::endian::little, "the .npy code assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

const char* descr_of(ScalarType t) {
  switch (t) {
    case kFloat: return "<f4";
    case kDouble: return "<f8";
    case kHalf: return "<f2";
    case kBool: return "|b1";
    case kByte: return "|u1";
    case kChar: return "|i1";
    case kShort: return "<i2";
    case kInt: return "<i4";
    case kLong: return "<i8";
    default: return nullptr;
  }
}

std::optional<ScalarType> dtype_of(std::string_view descr) {
  // '<' little-endian, '|' not applicable (one byte), '=' native (little here).
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')) return std::nullopt;
  const std::string_view code = descr.substr(1);
  if (code == "f4") return kFloat;
  if (code == "f8") return kDouble;
  if (code == "f2") return kHalf;
  if (code == "b1") return kBool;
  if (code == "u1") return kByte;
  if (code == "i1") return kChar;
  if (code == "i2") return kShort;
  if (code == "i4") return kInt;
  if (code == "i8") return kLong;
  return std::nullopt;
}

// A header as error messages quote it: at most 200 characters of it.
std::string quoted(std::string_view text) {
  return text.size() <= 200 ? std::string(text) : detail::str(text.substr(0, 200), "... (", text.size(), " bytes)");
}

// ---- a parser for the header dict ----
struct Value {
  enum Kind { Str, Bool, Int, Tuple, None } kind = None;
  std::string str;
  bool b = false;
  int64_t i = 0;
  std::vector<Value> items;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  std::vector<std::pair<std::string, Value>> dict() {
    std::vector<std::pair<std::string, Value>> out;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      Value k = value();
      if (k.kind != Value::Str) fail("a dict key is not a string");
      expect(':');
      out.emplace_back(k.str, value());
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) fail("text after the dict");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ValueError(detail::str(where_, ": bad .npy header (", what, " at offset ", pos_, "): ", quoted(s_)));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool take_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  Value value() {
    skip_ws();
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      ++pos_;
      const size_t end = s_.find(c, pos_);
      if (end == std::string_view::npos) fail("unterminated string");
      v.kind = Value::Str;
      v.str = std::string(s_.substr(pos_, end - pos_));
      pos_ = end + 1;
    } else if (c == '(' || c == '[') {
      // Bounded recursion: a header of 16 MB of '(' must not overflow the stack.
      if (depth_ == kMaxDepth) fail("tuples nested too deeply");
      const char close = c == '(' ? ')' : ']';
      ++pos_;
      ++depth_;
      v.kind = Value::Tuple;
      while (true) {
        skip_ws();
        if (peek() == close) break;
        v.items.push_back(value());
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() != close) fail("expected ',' or the end of a tuple");
      }
      ++pos_;
      --depth_;
    } else if (take_word("True")) {
      v.kind = Value::Bool;
      v.b = true;
    } else if (take_word("False")) {
      v.kind = Value::Bool;
    } else if (take_word("None")) {
      v.kind = Value::None;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      const size_t start = pos_;
      if (c == '-') ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
      if (peek() == 'L') ++pos_;  // Python 2 longs
      try {
        v.kind = Value::Int;
        v.i = std::stoll(std::string(s_.substr(start, pos_ - start)));
      } catch (const std::exception&) {
        pos_ = start;
        fail("bad integer");
      }
    } else {
      fail("unexpected character");
    }
    return v;
  }

  static constexpr int kMaxDepth = 32;  // NumPy writes 1 (shape), structured dtypes a few
  std::string_view s_;
  const std::string& where_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

ScalarType stored_dtype(ScalarType t) { return t == kBFloat16 ? kFloat : t; }

std::string encode_header(ScalarType dtype, IntArrayRef shape) {
  const char* descr = descr_of(dtype);
  TSR_CHECK(descr != nullptr, TypeError, "npy: no .npy dtype for ", dtype);
  std::string dict = detail::str("{'descr': '", descr, "', 'fortran_order': False, 'shape': (");
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dict += ',';  // Python's 1-tuple
  dict += "), }";
  // Version 1.0 has a 2-byte length; 2.0 (4 bytes) only when that does not fit.
  const bool v2 = dict.size() + 1 + 64 > 65535;
  const size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = prefix + dict.size() + 1;  // + '\n'
  total = (total + 63) / 64 * 64;           // data starts 64-byte aligned
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += static_cast<char>(0);
  const uint32_t len = static_cast<uint32_t>(dict.size());
  for (int b = 0; b < (v2 ? 4 : 2); ++b) out += static_cast<char>((len >> (8 * b)) & 0xff);
  return out + dict;
}

Header decode_header(const std::function<size_t(void*, size_t)>& read, const std::string& where) {
  unsigned char pre[8];
  if (read(pre, 8) != 8 || std::memcmp(pre, kMagic, kMagicLen) != 0)
    throw ValueError(detail::str(where, ": not a .npy file (no \\x93NUMPY magic)"));
  const int major = pre[6];
  if (major < 1 || major > 3)
    throw ValueError(detail::str(where, ": unsupported .npy format version ", major, ".", int(pre[7]),
                                 " (1.0, 2.0 and 3.0 are read)"));
  uint32_t len = 0;
  if (major == 1) {
    unsigned char l[2];
    if (read(l, 2) != 2) throw ValueError(detail::str(where, ": truncated .npy header"));
    len = l[0] | (uint32_t(l[1]) << 8);
  } else {
    unsigned char l[4];
    if (read(l, 4) != 4) throw ValueError(detail::str(where, ": truncated .npy header"));
    len = l[0] | (uint32_t(l[1]) << 8) | (uint32_t(l[2]) << 16) | (uint32_t(l[3]) << 24);
  }
  TSR_CHECK(len <= (1u << 24), ValueError, where, ": .npy header length ", len, " is implausible");
  // Grown as the bytes arrive: a length field alone does not get its 16 MB.
  std::string text;
  while (text.size() < len) {
    const size_t have = text.size(), n = std::min<size_t>(len - have, 64 * 1024);
    text.resize(have + n);
    if (read(text.data() + have, n) != n) throw ValueError(detail::str(where, ": truncated .npy header"));
  }

  Header h;
  bool have_descr = false, have_order = false, have_shape = false;
  for (auto& [key, v] : Parser(text, where).dict()) {
    if (key == "descr") {
      if (v.kind != Value::Str)
        throw ValueError(detail::str(where, ": unsupported dtype (a structured array); the .npy header is ", quoted(text)));
      auto t = dtype_of(v.str);
      if (!t)
        throw ValueError(detail::str(where, ": unsupported dtype '", v.str,
                                     "' (supported: <f4 <f8 <f2 |b1 |u1 |i1 <i2 <i4 <i8, little-endian)"));
      h.dtype = *t;
      have_descr = true;
    } else if (key == "fortran_order") {
      if (v.kind != Value::Bool) throw ValueError(detail::str(where, ": 'fortran_order' is not True/False"));
      if (v.b)
        throw ValueError(detail::str(where, ": the array is in Fortran order; only C order is read "
                                            "(save numpy.ascontiguousarray(a))"));
      have_order = true;
    } else if (key == "shape") {
      if (v.kind != Value::Tuple) throw ValueError(detail::str(where, ": 'shape' is not a tuple"));
      for (const Value& d : v.items) {
        if (d.kind != Value::Int || d.i < 0) throw ValueError(detail::str(where, ": bad 'shape' in ", quoted(text)));
        h.shape.push_back(d.i);
      }
      have_shape = true;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    throw ValueError(detail::str(where, ": the .npy header lacks ",
                                 !have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'", ": ", quoted(text)));
  return h;
}

}  // namespace tessera::npy
