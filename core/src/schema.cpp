// Schema::parse: the text of an op's signature into its name, arguments and
// returns (tessera/dispatcher.h), refusing anything malformed.
#include <tessera/dispatcher.h>
#include <tessera/error.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

namespace {
std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}
std::vector<std::string> split_top_level(std::string_view s) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string last = trim(s.substr(start));
  if (!last.empty()) parts.push_back(last);
  return parts;
}
// An op name (with an optional ".overload": dots allowed) or an argument name.
bool is_identifier(std::string_view s, bool dots) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.' || s.back() == '.')
    return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dots && c == '.');
  });
}
bool brackets_balanced(std::string_view s) {
  std::string open;
  for (char c : s) {
    if (c == '(' || c == '[') open += c;
    if ((c == ')' || c == ']') && (open.empty() || open.back() != (c == ')' ? '(' : '['))) return false;
    if (c == ')' || c == ']') open.pop_back();
  }
  return open.empty();
}
}  // namespace

std::string_view Schema::base_type(std::string_view type) {
  if (is_optional(type)) type.remove_suffix(1);
  if (const size_t p = type.find('('); p != std::string_view::npos) type = type.substr(0, p);
  if (type.starts_with("int[")) return "int[]";
  return type;
}

Schema Schema::parse(std::string_view text) {
  Schema sc;
  sc.text = std::string(text);
  const size_t open = text.find('(');
  const size_t arrow = text.rfind("->");
  TSR_CHECK(open != std::string_view::npos && arrow != std::string_view::npos && arrow > open, ValueError,
            "malformed op schema '", text, "': expected 'name(args) -> returns'");
  const size_t close = text.rfind(')', arrow);
  TSR_CHECK(close != std::string_view::npos && close > open, ValueError, "malformed op schema '", text, "'");
  TSR_CHECK(brackets_balanced(text), ValueError, "malformed op schema '", text, "': unbalanced brackets");
  TSR_CHECK(trim(text.substr(close + 1, arrow - close - 1)).empty(), ValueError, "malformed op schema '", text,
            "': text between the arguments and '->'");
  sc.name = trim(text.substr(0, open));
  // "ns::op.overload": a plugin's namespace (an identifier without dots) first.
  const size_t ns_end = sc.name.find("::");
  const bool ns_ok = ns_end == std::string::npos ||
                     (is_identifier(std::string_view(sc.name).substr(0, ns_end), /*dots=*/false) &&
                      sc.name.find("::", ns_end + 2) == std::string::npos);
  const std::string_view bare = ns_end == std::string::npos ? std::string_view(sc.name)
                                                            : std::string_view(sc.name).substr(ns_end + 2);
  TSR_CHECK(ns_ok && is_identifier(bare, /*dots=*/true), ValueError, "malformed op schema '", text, "': the name '",
            sc.name, "' is not an identifier (with an optional namespace:: and .overload)");
  bool kwarg_only = false;
  for (const std::string& part : split_top_level(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    SchemaArgument a;
    std::string decl = part;
    if (size_t eq = decl.find('='); eq != std::string::npos) {
      a.default_value = trim(std::string_view(decl).substr(eq + 1));
      decl = trim(std::string_view(decl).substr(0, eq));
    }
    const size_t sp = decl.rfind(' ');
    TSR_CHECK(sp != std::string::npos, ValueError, "malformed op schema '", text, "': argument '", part,
              "' needs a type and a name");
    a.type = trim(std::string_view(decl).substr(0, sp));
    a.name = trim(std::string_view(decl).substr(sp + 1));
    TSR_CHECK(is_identifier(a.name, /*dots=*/false), ValueError, "malformed op schema '", text, "': argument name '",
              a.name, "' is not an identifier");
    TSR_CHECK(brackets_balanced(a.type) && brackets_balanced(a.default_value), ValueError, "malformed op schema '",
              text, "': argument '", part, "' has unbalanced brackets in its type or default");
    for (const SchemaArgument& b : sc.arguments)
      TSR_CHECK(b.name != a.name, ValueError, "malformed op schema '", text, "': argument '", a.name, "' twice");
    a.kwarg_only = kwarg_only;
    a.mutable_alias = a.type.find('!') != std::string::npos;
    sc.arguments.push_back(std::move(a));
  }
  std::string rets = trim(text.substr(arrow + 2));
  if (!rets.empty() && rets.front() == '(' && rets.back() == ')') rets = rets.substr(1, rets.size() - 2);
  sc.returns = split_top_level(rets);
  for (const std::string& r : sc.returns)
    TSR_CHECK(!r.empty() && brackets_balanced(r), ValueError, "malformed op schema '", text, "': return '", r,
              "' is empty or has unbalanced brackets");
  return sc;
}

}  // namespace tessera
