// memory/object_writers.cpp — pickle and JSON encoders (see object_writers.h).
#include "object_writers.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessera::memory {

// Pickle opcodes used (pickletools names).
namespace op {
constexpr char PROTO = '\x80', STOP = '.', MARK = '(', NONE = 'N', NEWTRUE = '\x88', NEWFALSE = '\x89';
constexpr char BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = '\x8a', BINFLOAT = 'G';
constexpr char BINUNICODE = 'X', EMPTY_DICT = '}', SETITEMS = 'u', EMPTY_LIST = ']', APPENDS = 'e';
}  // namespace op

PickleWriter::PickleWriter() {
  out_.push_back(op::PROTO);
  out_.push_back('\x02');
}

void PickleWriter::none() { out_.push_back(op::NONE); }
void PickleWriter::boolean(bool v) { out_.push_back(v ? op::NEWTRUE : op::NEWFALSE); }

void PickleWriter::long1(const unsigned char* le, size_t n) {
  out_.push_back(op::LONG1);
  out_.push_back(static_cast<char>(n));
  out_.append(reinterpret_cast<const char*>(le), n);
}

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_.push_back(op::BININT1);
    out_.push_back(static_cast<char>(v));
  } else if (v >= 0 && v < 65536) {
    out_.push_back(op::BININT2);
    out_.push_back(static_cast<char>(v & 0xff));
    out_.push_back(static_cast<char>(v >> 8));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_.push_back(op::BININT);
    const uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  } else {
    // LONG1: little-endian two's complement, the shortest that keeps the sign.
    unsigned char le[8];
    const uint64_t u = static_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>((u >> (8 * i)) & 0xff);
    size_t n = 8;
    while (n > 1) {
      const unsigned char top = le[n - 1], next_sign = le[n - 2] & 0x80;
      if ((top == 0x00 && next_sign == 0) || (top == 0xff && next_sign != 0)) --n;
      else break;
    }
    long1(le, n);
  }
}

void PickleWriter::uinteger(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(v));
  unsigned char le[9];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  le[8] = 0;  // a zero byte keeps the value positive
  long1(le, 9);
}

void PickleWriter::real(double v) {
  out_.push_back(op::BINFLOAT);
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void PickleWriter::str(std::string_view s) {
  out_.push_back(op::BINUNICODE);
  const uint32_t n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out_.append(s);
}

void PickleWriter::begin_dict() { out_.push_back(op::EMPTY_DICT), out_.push_back(op::MARK); }
void PickleWriter::end_dict() { out_.push_back(op::SETITEMS); }
void PickleWriter::begin_list() { out_.push_back(op::EMPTY_LIST), out_.push_back(op::MARK); }
void PickleWriter::end_list() { out_.push_back(op::APPENDS); }

const std::string& PickleWriter::finish() {
  out_.push_back(op::STOP);
  return out_;
}

void JsonWriter::value_prefix() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

void JsonWriter::quoted(std::string_view s) {
  out_.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out_ += buf;
        } else {
          out_.push_back(c);
        }
    }
  }
  out_.push_back('"');
}

void JsonWriter::none() { value_prefix(), out_ += "null"; }
void JsonWriter::boolean(bool v) { value_prefix(), out_ += v ? "true" : "false"; }
void JsonWriter::integer(int64_t v) { value_prefix(), out_ += std::to_string(v); }
void JsonWriter::uinteger(uint64_t v) { value_prefix(), out_ += std::to_string(v); }
void JsonWriter::real(double v) {
  value_prefix();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out_ += buf;
  if (std::strpbrk(buf, ".eE") == nullptr) out_ += ".0";  // stays a float when read back
}
void JsonWriter::str(std::string_view s) { value_prefix(), quoted(s); }
void JsonWriter::key(std::string_view s) {
  value_prefix();
  quoted(s);
  out_.push_back(':');
  after_key_ = true;
}
void JsonWriter::begin_dict() { value_prefix(), out_.push_back('{'), first_.push_back(true); }
void JsonWriter::end_dict() { out_.push_back('}'), first_.pop_back(); }
void JsonWriter::begin_list() { value_prefix(), out_.push_back('['), first_.push_back(true); }
void JsonWriter::end_list() { out_.push_back(']'), first_.pop_back(); }

}  // namespace tessera::memory
