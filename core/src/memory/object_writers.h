// memory/object_writers.h — two streaming writers of the same object model
// (dict, list, str, int, float, bool, None): a protocol-2 pickle encoder and a
// JSON encoder. The snapshot writer drives either through one template.
// Usage: begin_dict(); key("a"); integer(1); end_dict(); finish().
// Thread-safety: one writer per thread. Errors: none (misuse is a bug).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::memory {

/// Pickle protocol 2 (readable by every Python 3): no memo, no framing.
/// Opcodes: PROTO, EMPTY_DICT/EMPTY_LIST + MARK ... SETITEMS/APPENDS,
/// BINUNICODE, BININT1/BININT2/BININT/LONG1, BINFLOAT, NEWTRUE/NEWFALSE, NONE, STOP.
class PickleWriter {
 public:
  PickleWriter();  // starts with PROTO 2
  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void uinteger(uint64_t v);
  void real(double v);
  void str(std::string_view s);
  void key(std::string_view s) { str(s); }
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  /// Appends STOP and returns the bytes.
  const std::string& finish();

 private:
  void long1(const unsigned char* le, size_t n);
  std::string out_;
};

/// JSON text; strings are escaped per RFC 8259 (control characters as \u00XX,
/// bytes >= 0x80 passed through as UTF-8). NaN and infinities become null.
class JsonWriter {
 public:
  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void uinteger(uint64_t v);
  void real(double v);
  void str(std::string_view s);
  void key(std::string_view s);
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  const std::string& finish() { return out_; }

 private:
  void value_prefix();
  void quoted(std::string_view s);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace tessera::memory
