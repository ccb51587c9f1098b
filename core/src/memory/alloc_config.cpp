// memory/alloc_config.cpp — TESSERA_ALLOC_CONF parsing (see alloc_config.h).
#include "alloc_config.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <tessera/error.h>

namespace tessera::memory {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMinMaxSplitMiB = 20;  // the large segment size: a smaller limit splits nothing useful

[[noreturn]] void refuse(std::string_view key, std::string_view value, std::string_view accepted) {
  throw ValueError(detail::str("TESSERA_ALLOC_CONF: ", key, ":", value, " is not accepted: ", key,
                               " takes ", accepted));
}

// Tokens as PYTORCH_CUDA_ALLOC_CONF's: words, and ',' ':' '[' ']' each alone; spaces dropped.
std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) out.push_back(std::move(word)), word.clear();
      out.emplace_back(1, c);
    } else if (c != ' ' && c != '\t' && c != '\n') {
      word.push_back(c);
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

std::optional<uint64_t> to_uint(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string str(s);
  char* end = nullptr;
  const double v = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool divisions_ok(uint64_t v) { return v == 0 || (std::has_single_bit(v) && v <= (uint64_t{1} << 31)); }

}  // namespace

std::string AllocatorConfig::to_string() const {
  std::ostringstream os;
  const char* sep = "";
  if (max_split_size != std::numeric_limits<size_t>::max()) {
    os << sep << "max_split_size_mb:" << max_split_size / kMiB;
    sep = ",";
  }
  bool any_div = false, uniform = true;
  for (uint32_t d : roundup_power2_divisions) {
    any_div |= d > 1;
    uniform &= d == roundup_power2_divisions[0];
  }
  if (any_div) {
    os << sep << "roundup_power2_divisions:";
    if (uniform) {
      os << roundup_power2_divisions[0];
    } else {
      // Band i ends at 2^(i+1) MiB: emit a bound wherever the value changes.
      os << "[";
      for (size_t i = 0; i + 1 < kRoundupBands; ++i)
        if (roundup_power2_divisions[i] != roundup_power2_divisions[i + 1])
          os << (size_t{2} << i) << ":" << roundup_power2_divisions[i] << ",";
      os << ">:" << roundup_power2_divisions[kRoundupBands - 1] << "]";
    }
    sep = ",";
  }
  if (garbage_collection_threshold > 0) os << sep << "garbage_collection_threshold:" << garbage_collection_threshold, sep = ",";
  if (per_process_memory_fraction > 0) os << sep << "per_process_memory_fraction:" << per_process_memory_fraction, sep = ",";
  if (expandable_segments) os << sep << "expandable_segments:True", sep = ",";
  if (backend == AllocatorBackend::Plugin) os << sep << "backend:plugin";
  return os.str();
}

AllocatorConfig parse_alloc_conf(std::string_view text) {
  AllocatorConfig cfg;
  cfg.text = std::string(text);
  const std::vector<std::string> t = tokenize(text);
  std::set<std::string> seen;
  size_t i = 0;
  auto at = [&](size_t k) -> std::string_view { return k < t.size() ? std::string_view(t[k]) : std::string_view(); };
  while (i < t.size()) {
    const std::string key = t[i];
    if (key == "," ) { ++i; continue; }  // tolerate "a:b,,c:d" and a trailing comma
    static const char* const kKeys =
        "max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold, "
        "per_process_memory_fraction, expandable_segments, backend";
    if (key == ":" || key == "[" || key == "]")
      throw ValueError(detail::str("TESSERA_ALLOC_CONF: '", text, "' is malformed: expected key:value pairs separated by ','"));
    if (key != "max_split_size_mb" && key != "roundup_power2_divisions" && key != "garbage_collection_threshold" &&
        key != "per_process_memory_fraction" && key != "expandable_segments" && key != "backend")
      throw ValueError(detail::str("TESSERA_ALLOC_CONF: unknown key '", key, "' (in '", text, "'); the keys are ", kKeys));
    if (!seen.insert(key).second)
      throw ValueError(detail::str("TESSERA_ALLOC_CONF: key '", key, "' is given twice (in '", text, "')"));
    if (at(i + 1) != ":") refuse(key, "", "a value after ':' (key:value)");
    i += 2;
    const std::string_view value = at(i);
    if (key == "roundup_power2_divisions" && value == "[") {
      // [bound:divisions,...,>:divisions]; a bound B (MiB) covers sizes below B MiB
      // not covered by an earlier bound; '>' covers the sizes above the last bound.
      std::string shown = "[";
      std::array<uint32_t, AllocatorConfig::kRoundupBands> bands{};
      size_t next_band = 0;
      bool closed = false, saw_rest = false;
      ++i;
      const char* kListForm =
          "a power of two, or a list [bound:divisions,...,>:divisions] whose bounds are increasing powers of two "
          "in MiB (2..32768), divisions powers of two or 0, '>' last";
      while (i < t.size()) {
        if (t[i] == "]") { closed = true; shown += "]"; break; }
        const std::string bound = t[i];
        shown += bound;
        if (saw_rest || at(i + 1) != ":") refuse(key, shown + "...", kListForm);
        shown += ":" + std::string(at(i + 2));
        const auto div = to_uint(at(i + 2));
        if (!div || !divisions_ok(*div)) refuse(key, shown + "...", kListForm);
        if (bound == ">") {
          for (size_t b = next_band; b < bands.size(); ++b) bands[b] = static_cast<uint32_t>(*div);
          next_band = bands.size();
          saw_rest = true;
        } else {
          const auto mib = to_uint(bound);
          if (!mib || !std::has_single_bit(*mib) || *mib < 2 || *mib > 32768) refuse(key, shown + "...", kListForm);
          const size_t band = static_cast<size_t>(std::bit_width(*mib) - 1);  // band of sizes from `mib` MiB
          if (band < next_band || (band == next_band && next_band > 0)) refuse(key, shown + "...", kListForm);
          for (size_t b = next_band; b < band; ++b) bands[b] = static_cast<uint32_t>(*div);
          next_band = band;
        }
        i += 3;
        if (at(i) == ",") { shown += ","; ++i; }
        else if (i >= t.size()) break;
        else if (at(i) != "]") refuse(key, shown + "...", kListForm);
      }
      if (!closed) refuse(key, shown, "a list closed by ']'");
      cfg.roundup_power2_divisions = bands;
      ++i;
    } else {
      if (value.empty() || value == "," || value == ":" || value == "[" || value == "]") refuse(key, "", "a value after ':'");
      if (key == "max_split_size_mb") {
        const auto v = to_uint(value);
        if (!v || *v < kMinMaxSplitMiB) refuse(key, value, "an integer number of MiB >= 20");
        const uint64_t cap = std::numeric_limits<size_t>::max() / kMiB;
        cfg.max_split_size = static_cast<size_t>(*v > cap ? cap : *v) * kMiB;
      } else if (key == "roundup_power2_divisions") {
        const auto v = to_uint(value);
        if (!v || !divisions_ok(*v))
          refuse(key, value, "a power of two (0 or 1: off), or a list [bound:divisions,...,>:divisions]");
        cfg.roundup_power2_divisions.fill(static_cast<uint32_t>(*v));
      } else if (key == "garbage_collection_threshold") {
        const auto v = to_double(value);
        if (!v || !(*v > 0.0 && *v < 1.0)) refuse(key, value, "a number x with 0 < x < 1");
        cfg.garbage_collection_threshold = *v;
      } else if (key == "per_process_memory_fraction") {
        const auto v = to_double(value);
        if (!v || !(*v > 0.0 && *v <= 1.0)) refuse(key, value, "a number x with 0 < x <= 1");
        cfg.per_process_memory_fraction = *v;
      } else if (key == "expandable_segments") {
        if (value == "True" || value == "true") cfg.expandable_segments = true;
        else if (value == "False" || value == "false") cfg.expandable_segments = false;
        else refuse(key, value, "True or False");
      } else {  // backend
        if (value == "caching") cfg.backend = AllocatorBackend::Caching;
        else if (value == "plugin") cfg.backend = AllocatorBackend::Plugin;
        else refuse(key, value, "caching (the core's caching allocator) or plugin (the device's own allocator)");
      }
      ++i;
    }
    if (i < t.size()) {
      if (t[i] != ",")
        throw ValueError(detail::str("TESSERA_ALLOC_CONF: after ", key, "'s value, expected ',' but found '", t[i],
                                     "' (in '", text, "')"));
      ++i;
    }
  }
  return cfg;
}

namespace {
std::mutex g_conf_mutex;
std::optional<AllocatorConfig> g_conf_set;  // set_alloc_conf's, wins over the environment
}  // namespace

AllocatorConfig current_alloc_conf() {
  {
    std::lock_guard lock(g_conf_mutex);
    if (g_conf_set) return *g_conf_set;
  }
  static const std::string env = [] {
    const char* v = std::getenv("TESSERA_ALLOC_CONF");
    return std::string(v ? v : "");
  }();
  return parse_alloc_conf(env);
}

void set_alloc_conf(std::string_view text) {
  AllocatorConfig cfg = parse_alloc_conf(text);
  std::lock_guard lock(g_conf_mutex);
  g_conf_set = std::move(cfg);
}

}  // namespace tessera::memory
