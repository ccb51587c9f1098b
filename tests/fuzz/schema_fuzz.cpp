// Fuzz target: the op schema parser (tessera::Schema::parse, core/src/dispatcher.cpp).
//
// The input is the schema text. Properties:
//   - parse returns or throws tessera::ValueError naming the schema; nothing else;
//   - an accepted schema is well formed: "name(args) -> returns" with nothing
//     between the argument list and the arrow, brackets balanced, the op name an
//     identifier with optional ".overload", each argument "type name[=default]"
//     with an identifier for a name, no name twice, keyword-only (after '*')
//     once and from then on;
//   - parsing is idempotent: the schema written back from the parsed parts parses
//     to the same parts.
#include <tessera/dispatcher.h>
#include <tessera/error.h>

#include <cctype>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_input.h"

namespace {

constexpr const char* kName = "schema";

bool is_identifier(std::string_view s, bool dots) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') return false;
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (!(std::isalnum(u) || ch == '_' || (dots && ch == '.'))) return false;
  }
  return s.back() != '.';
}

bool trimmed(std::string_view s) {
  return s.empty() || (!std::isspace(static_cast<unsigned char>(s.front())) &&
                       !std::isspace(static_cast<unsigned char>(s.back())));
}

bool balanced(std::string_view s) {
  std::string stack;
  for (char ch : s) {
    if (ch == '(' || ch == '[') stack += ch;
    if (ch == ')' || ch == ']') {
      if (stack.empty() || stack.back() != (ch == ')' ? '(' : '[')) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

std::string render(const tessera::Schema& s) {
  std::string out = s.name + "(";
  bool kw = false;
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    const auto& a = s.arguments[i];
    if (i) out += ", ";
    if (a.kwarg_only && !kw) {
      out += "*, ";
      kw = true;
    }
    out += a.type + " " + a.name;
    if (!a.default_value.empty()) out += "=" + a.default_value;
  }
  out += ") -> (";
  for (size_t i = 0; i < s.returns.size(); ++i) out += (i ? ", " : "") + s.returns[i];
  return out + ")";
}

bool same(const tessera::Schema& a, const tessera::Schema& b) {
  if (a.name != b.name || a.returns != b.returns || a.arguments.size() != b.arguments.size()) return false;
  for (size_t i = 0; i < a.arguments.size(); ++i) {
    const auto &x = a.arguments[i], &y = b.arguments[i];
    if (x.type != y.type || x.name != y.name || x.default_value != y.default_value ||
        x.kwarg_only != y.kwarg_only || x.mutable_alias != y.mutable_alias)
      return false;
  }
  return true;
}

void check_accepted(std::string_view text, const tessera::Schema& s) {
  TSR_FUZZ_CHECK(kName, s.text == text);
  TSR_FUZZ_CHECK(kName, is_identifier(s.name, /*dots=*/true));
  TSR_FUZZ_CHECK(kName, balanced(text));
  const size_t open = text.find('(');
  const size_t arrow = text.rfind("->");
  const size_t close = text.rfind(')', arrow);
  TSR_FUZZ_CHECK(kName, open != std::string_view::npos && arrow != std::string_view::npos &&
                            close != std::string_view::npos && open < close && close < arrow);
  for (size_t i = close + 1; i < arrow; ++i)  // nothing between the argument list and the arrow
    TSR_FUZZ_CHECK(kName, std::isspace(static_cast<unsigned char>(text[i])));
  std::set<std::string> names;
  bool kw = false;
  for (const auto& a : s.arguments) {
    TSR_FUZZ_CHECK(kName, !a.type.empty() && trimmed(a.type) && balanced(a.type));
    TSR_FUZZ_CHECK(kName, is_identifier(a.name, /*dots=*/false));
    TSR_FUZZ_CHECK(kName, trimmed(a.default_value) && balanced(a.default_value));
    TSR_FUZZ_CHECK(kName, names.insert(a.name).second);  // no argument name twice
    TSR_FUZZ_CHECK(kName, !kw || a.kwarg_only);          // keyword-only stays so
    kw = a.kwarg_only;
    TSR_FUZZ_CHECK(kName, a.mutable_alias == (a.type.find('!') != std::string::npos));
  }
  for (const auto& r : s.returns) TSR_FUZZ_CHECK(kName, !r.empty() && trimmed(r) && balanced(r));

  const std::string again = render(s);
  tessera::Schema s2;
  try {
    s2 = tessera::Schema::parse(again);
  } catch (const tessera::Error&) {
    tessera::fuzz::violated(kName, "the schema written back from an accepted one is refused");
  }
  TSR_FUZZ_CHECK(kName, same(s, s2));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // schemas are short; longer inputs only slow the search
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tessera::Schema s;
  try {
    s = tessera::Schema::parse(text);
  } catch (const tessera::Error& e) {
    TSR_FUZZ_CHECK(kName, e.code() == tessera::ErrorCode::InvalidArgument);
    TSR_FUZZ_CHECK(kName, std::string_view(e.what()).find("schema") != std::string_view::npos);
    return 0;
  }
  check_accepted(text, s);
  return 0;
}
