// Perf mode (docs/conformance.md): per kernel, the device's time and GB/s (or
// GFLOP/s for matrix products and convolutions) next to the cpu plugin's on
// the same case. Cases: 2^20-element operands for pointwise ops, a few large
// shapes for the heavy ops, otherwise the op's largest sample. Medians of 5
// timed rounds after a warm-up, the device synchronized inside each round.
#include <tessera/tessera.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "runner.h"

namespace tessera::kit {

namespace {

using Status = CaseResult::Status;


struct PerfCase {
  Sample sample;
  double flops = 0;  // 0: report bandwidth
};

Sample tensors_then(std::string name, std::vector<Tensor> ts, std::vector<SampleArg> rest) {
  Sample s;
  s.name = std::move(name);
  for (Tensor& t : ts) s.args.push_back(SampleArg::tensor(contiguous(std::move(t))));
  for (SampleArg& a : rest) s.args.push_back(std::move(a));
  return s;
}

// A large case for the op, when one of the rules below fits; nullopt otherwise.
std::optional<PerfCase> large_case(const OpCase& c, std::mt19937_64& rng) {
  const std::string& name = c.sample_op->name();
  const ScalarType t = c.dtype;
  const Domain d = is_floating_type(t) ? Domain::Finite : Domain::Small;
  auto rand = [&](std::vector<int64_t> shape, Domain dom) { return random_tensor(rng, std::move(shape), t, dom); };
  if (name == "mm") {
    const int64_t n = 512;
    return PerfCase{tensors_then("[512, 512] @ [512, 512]", {rand({n, n}, d), rand({n, n}, d)}, {}), 2.0 * n * n * n};
  }
  if (name == "bmm")
    return PerfCase{tensors_then("8 x [256, 256] @ [256, 256]", {rand({8, 256, 256}, d), rand({8, 256, 256}, d)}, {}),
                    2.0 * 8 * 256 * 256 * 256};
  if (name == "addmm")
    return PerfCase{tensors_then("[512] + [512, 512] @ [512, 512]", {rand({512}, d), rand({512, 512}, d), rand({512, 512}, d)},
                                 {SampleArg::integer(1), SampleArg::integer(1)}),
                    2.0 * 512 * 512 * 512};
  if (name == "conv2d" && is_floating_type(t))
    return PerfCase{tensors_then("[8, 64, 32, 32] * [64, 64, 3, 3], padding 1",
                                 {rand({8, 64, 32, 32}, d), rand({64, 64, 3, 3}, d), rand({64}, d)},
                                 {SampleArg::int_list({1, 1}), SampleArg::int_list({1, 1}), SampleArg::int_list({1, 1}),
                                  SampleArg::integer(1)}),
                    2.0 * 8 * 64 * 32 * 32 * 64 * 9};
  if (name == "sum" || name == "amax" || name == "prod" || name == "any" || name == "all" || name == "amin")
    return PerfCase{tensors_then("[1024, 1024] over dim 1", {rand({1024, 1024}, name == "prod" ? Domain::Small : d)},
                                 {SampleArg::int_list({1}), SampleArg::boolean(false)}),
                    0};
  if ((name == "softmax" || name == "log_softmax") && is_floating_type(t))
    return PerfCase{tensors_then("[1024, 1024] dim 1", {rand({1024, 1024}, d)}, {SampleArg::integer(1), SampleArg::none()}),
                    0};
  if ((c.sample_op->flags() & kPointwise) != 0) {
    // Every tensor argument 2^20 elements; the options at their defaults.
    std::vector<Tensor> ts;
    size_t tensors = 0;
    const auto& args = c.sample_op->schema().arguments;
    while (tensors < args.size() && args[tensors].type.rfind("Tensor", 0) == 0) ++tensors;
    for (size_t i = 0; i < tensors; ++i) {
      Domain dom = d;
      if (name == "where" && i == 0) {
        ts.push_back(random_tensor(rng, {1 << 20}, kBool, Domain::Unit));
        continue;
      }
      if ((name == "div" || name == "remainder" || name == "fmod") && i == 1 && !is_floating_type(t)) dom = Domain::NonZero;
      if ((name == "bitwise_left_shift" || name == "bitwise_right_shift") && i == 1) dom = Domain::Shift;
      ts.push_back(rand({1 << 20}, dom));
    }
    std::mt19937_64 unused;
    SampleContext ctx{*c.sample_op, t, unused};
    std::vector<SampleArg> rest;
    try {
      rest = option_variants(ctx, tensors).front();
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return PerfCase{tensors_then("2^20 elements", std::move(ts), std::move(rest)), 0};
  }
  return std::nullopt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call on `device` (median of 5 rounds), or a negative value when it fails.
double time_call(const OpCase& c, const Sample& s, Device device, int* calls_out, std::string* error) {
  Materialized m = materialize(s, device);
  const bool sync = device != Device("cpu");
  auto round = [&](int n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)call_op(*c.op, m);  // in-place ops rewrite their argument: timing only
    if (sync) synchronize(device);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    (void)round(1);
    // Enough calls for a round of ~20 ms.
    const double one = std::max(round(1), 1e-7);
    const int calls = static_cast<int>(std::clamp(0.02 / one, 1.0, 10000.0));
    std::vector<double> rounds;
    for (int r = 0; r < 5; ++r) rounds.push_back(round(calls) / calls);
    *calls_out = calls;
    return median(rounds);
  } catch (const std::exception& e) {
    *error = e.what();
    return -1;
  }
}

double bytes_moved(const Sample& s, const std::vector<Tensor>& outs) {
  double b = 0;
  for (const SampleArg& a : s.args)
    for (const TensorInput& in : a.tensors) {
      const Tensor v = in.view ? in.view(in.base) : in.base;
      b += static_cast<double>(v.numel()) * static_cast<double>(v.element_size());
    }
  for (const Tensor& o : outs)
    if (o.defined()) b += static_cast<double>(o.numel()) * static_cast<double>(o.element_size());
  return b;
}

std::string rate(double secs, double bytes, double flops) {
  char buf[64];
  if (flops > 0) std::snprintf(buf, sizeof buf, "%.2f GFLOP/s", flops / secs / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes / secs / 1e9);
  return buf;
}

}  // namespace

Report run_perf_mode(const Target& target, const Options& options) {
  Report r;
  std::ostringstream table;
  table << "perf of " << target.device_type << " against cpu (median time per call):\n";
  for (const OpCase& c : op_cases(target, options)) {
    if (c.op != c.sample_op) continue;  // in-place variants run the same kernels
    // Which cases the op takes: cpu says, or the meta rule for a plugin-defined op without a cpu kernel.
    const Device judge = c.cpu_reference ? Device("cpu") : Device("meta");
    std::mt19937_64 rng(options.seed + 11);
    std::optional<PerfCase> pc = large_case(c, rng);
    if (!pc) {
      // The op's largest sample that cpu runs.
      std::vector<Sample> samples;
      try {
        samples = samples_for(c, options.seed);
      } catch (const std::exception&) {
        continue;
      }
      double best = -1;
      for (const Sample& s : samples) {
        double n = 0;
        for (const SampleArg& a : s.args)
          for (const TensorInput& in : a.tensors) n += static_cast<double>(in.base.numel());
        if (n <= best) continue;
        try {
          Materialized m = materialize(s, judge);
          (void)call_op(*c.op, m);
        } catch (const std::exception&) {
          continue;
        }
        best = n;
        pc = PerfCase{s, 0};
      }
      if (!pc) continue;
    }
    std::vector<Tensor> outs;
    try {
      Materialized m = materialize(pc->sample, judge);
      outs = call_op(*c.op, m);
    } catch (const std::exception&) {
      continue;
    }
    const double bytes = bytes_moved(pc->sample, outs);
    int dev_calls = 0, cpu_calls = 0;
    std::string dev_err, cpu_err;
    const double t_dev = time_call(c, pc->sample, target.device, &dev_calls, &dev_err);
    const double t_cpu = c.cpu_reference ? time_call(c, pc->sample, Device("cpu"), &cpu_calls, &cpu_err) : -1;
    const std::string who = c.op->name() + "(" + dtype_text(c.dtype) + ")";
    if (t_dev < 0) {
      r.results.push_back({c.op->name(), dtype_text(c.dtype), pc->sample.name, "perf", Status::Fail,
                           "the device raised: " + dev_err, 0});
      continue;
    }
    char line[512];
    if (t_cpu > 0) {
      std::snprintf(line, sizeof line, "%s %s: %s %.4g ms (%s), cpu %.4g ms (%s), %s/cpu %.3g", who.c_str(),
                    pc->sample.name.c_str(), target.device_type.c_str(), t_dev * 1e3,
                    rate(t_dev, bytes, pc->flops).c_str(), t_cpu * 1e3, rate(t_cpu, bytes, pc->flops).c_str(),
                    target.device_type.c_str(), t_dev / t_cpu);
    } else {
      std::snprintf(line, sizeof line, "%s %s: %s %.4g ms (%s)", who.c_str(), pc->sample.name.c_str(),
                    target.device_type.c_str(), t_dev * 1e3, rate(t_dev, bytes, pc->flops).c_str());
    }
    table << "  " << line << "\n";
    r.results.push_back({c.op->name(), dtype_text(c.dtype), pc->sample.name, "perf", Status::Pass, line, t_dev});
  }
  r.notes.push_back(table.str());
  return r;
}

}  // namespace tessera::kit
