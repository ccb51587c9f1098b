// The conformance kit's runner (tessera-plugin-test, docs/conformance.md):
// options, results and the modes. main.cpp is the command line around it.
#pragma once

#include <tessera/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::kit {

enum class Mode { Test, Grad, Perf, Coverage };
enum class Output { Console, Json, Junit };

struct Options {
  std::string plugin;              // a path to the plugin's .so, or a loaded plugin's name
  std::string device_type;         // empty: the plugin's first device type
  std::string op_regex;            // empty: every op
  std::vector<std::string> dtypes; // empty: every dtype the plugin registers
  Mode mode = Mode::Test;
  uint64_t seed = 0;
  Output output = Output::Console;
  int jobs = 1;                    // ops checked at once
  int threads = 4;                 // threads of the concurrency check
};

/// One check of one case.
struct CaseResult {
  enum class Status { Pass, Fail, Skip };
  std::string op;
  std::string dtype;
  std::string sample;   // the case's name
  std::string check;    // "values", "shape", "meta", "inputs", "guard", "deterministic", "threads", "stream", "error", ...
  Status status = Status::Pass;
  std::string message;  // why it failed or was skipped
  double seconds = 0;
};

/// What a run found, in the order checked.
struct Report {
  std::string plugin, plugin_path, device_type, mode;
  std::vector<CaseResult> results;
  std::vector<std::string> notes;  // e.g. the coverage or perf tables, ABI findings
  bool passed() const;
  size_t count(CaseResult::Status s) const;
};

/// Loads the plugin beside the default ones (as any program would) and runs
/// the mode. Throws tessera::Error when the plugin cannot be loaded or has no
/// such device type; everything found in the plugin is in the report.
Report run(const Options& options);

/// The report as the format asks (console text, JSON, JUnit XML).
std::string format(const Report& report, Output output);

}  // namespace tessera::kit
