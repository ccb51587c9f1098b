// The report in the formats a plugin author's CI reads (kit.h: format).
#include "kit.h"

#include <array>
#include <cstdio>
#include <map>
#include <sstream>

namespace tessera::kit {

namespace {
using Status = CaseResult::Status;

const char* status_name(Status s) { return s == Status::Pass ? "pass" : s == Status::Fail ? "fail" : "skip"; }

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else o += ch;
  }
  return o;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else if (c < 0x20 && c != '\n' && c != '\t') o += ' ';
    else o += ch;
  }
  return o;
}

std::string console(const Report& r) {
  std::ostringstream os;
  os << "tessera-plugin-test: plugin " << r.plugin << " (" << r.plugin_path << "), device type " << r.device_type
     << ", mode " << r.mode << "\n";
  // One line per (op, dtype), then every failure in full.
  std::map<std::pair<std::string, std::string>, std::array<size_t, 3>> per;
  std::vector<std::pair<std::string, std::string>> order;
  for (const CaseResult& c : r.results) {
    auto key = std::make_pair(c.op, c.dtype);
    if (!per.count(key)) order.push_back(key);
    per[key][static_cast<size_t>(c.status)]++;
  }
  for (const auto& key : order) {
    const auto& n = per[key];
    os << (n[1] ? "FAIL " : "ok   ") << key.first << "(" << key.second << "): " << n[0] << " passed";
    if (n[1]) os << ", " << n[1] << " failed";
    if (n[2]) os << ", " << n[2] << " skipped";
    os << "\n";
  }
  for (const CaseResult& c : r.results)
    if (c.status == Status::Fail)
      os << "\nFAIL " << c.op << "(" << c.dtype << ") case '" << c.sample << "' [" << c.check << "]: " << c.message
         << "\n";
  for (const std::string& n : r.notes) os << "\n" << n << "\n";
  os << "\n" << r.count(Status::Pass) << " checks passed, " << r.count(Status::Fail) << " failed, "
     << r.count(Status::Skip) << " skipped: " << (r.passed() ? "PASS" : "FAIL") << "\n";
  return os.str();
}

std::string json(const Report& r) {
  std::ostringstream os;
  os << "{\"plugin\": \"" << json_escape(r.plugin) << "\", \"path\": \"" << json_escape(r.plugin_path)
     << "\", \"device_type\": \"" << json_escape(r.device_type) << "\", \"mode\": \"" << r.mode
     << "\", \"passed\": " << (r.passed() ? "true" : "false") << ", \"counts\": {\"pass\": " << r.count(Status::Pass)
     << ", \"fail\": " << r.count(Status::Fail) << ", \"skip\": " << r.count(Status::Skip) << "},\n \"results\": [";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const CaseResult& c = r.results[i];
    os << (i ? ",\n  " : "\n  ") << "{\"op\": \"" << json_escape(c.op) << "\", \"dtype\": \"" << c.dtype
       << "\", \"case\": \"" << json_escape(c.sample) << "\", \"check\": \"" << c.check << "\", \"status\": \""
       << status_name(c.status) << "\", \"message\": \"" << json_escape(c.message) << "\"}";
  }
  os << "],\n \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) os << (i ? ", " : "") << "\"" << json_escape(r.notes[i]) << "\"";
  os << "]}\n";
  return os.str();
}

// JUnit: a testsuite per op, a testcase per (dtype, case, check).
std::string junit(const Report& r) {
  std::map<std::string, std::vector<const CaseResult*>> suites;
  std::vector<std::string> order;
  for (const CaseResult& c : r.results) {
    if (!suites.count(c.op)) order.push_back(c.op);
    suites[c.op].push_back(&c);
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tessera-plugin-test " << xml_escape(r.plugin)
     << " " << xml_escape(r.device_type) << "\" tests=\"" << r.results.size() << "\" failures=\""
     << r.count(Status::Fail) << "\" skipped=\"" << r.count(Status::Skip) << "\">\n";
  for (const std::string& op : order) {
    const auto& cs = suites[op];
    size_t fails = 0, skips = 0;
    for (const CaseResult* c : cs) fails += c->status == Status::Fail, skips += c->status == Status::Skip;
    os << "  <testsuite name=\"" << xml_escape(op) << "\" tests=\"" << cs.size() << "\" failures=\"" << fails
       << "\" skipped=\"" << skips << "\">\n";
    for (const CaseResult* c : cs) {
      os << "    <testcase classname=\"" << xml_escape(r.device_type + "." + op + "." + c->dtype) << "\" name=\""
         << xml_escape(c->sample + " [" + c->check + "]") << "\" time=\"" << c->seconds << "\"";
      if (c->status == Status::Pass) {
        os << "/>\n";
      } else if (c->status == Status::Fail) {
        os << ">\n      <failure message=\"" << xml_escape(c->message) << "\"/>\n    </testcase>\n";
      } else {
        os << ">\n      <skipped message=\"" << xml_escape(c->message) << "\"/>\n    </testcase>\n";
      }
    }
    os << "  </testsuite>\n";
  }
  if (!r.notes.empty()) {
    os << "  <system-out>";
    for (const std::string& n : r.notes) os << xml_escape(n) << "\n";
    os << "</system-out>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}
}  // namespace

bool Report::passed() const { return count(CaseResult::Status::Fail) == 0; }

size_t Report::count(CaseResult::Status s) const {
  size_t n = 0;
  for (const CaseResult& c : results) n += c.status == s;
  return n;
}

std::string format(const Report& r, Output output) {
  switch (output) {
    case Output::Json: return json(r);
    case Output::Junit: return junit(r);
    default: return console(r);
  }
}

}  // namespace tessera::kit
