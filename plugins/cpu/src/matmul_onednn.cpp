// bfloat16 matrix products through oneDNN's matmul primitive (matmul_onednn.hpp).
//
// Why oneDNN, and which of its kernels. Measured on a development machine
// (2 cores, Sapphire Rapids class: avx512_bf16, amx_bf16), 1 thread, bfloat16
// mm through the Python module against the float32 path (widen, OpenBLAS
// 0.3.21 sgemm, round back; TESSERA_CPU_ONEDNN=0), oneDNN 2.6.3 picking its
// AMX kernel (brg:avx512_core_amx_bf16): 512^3 ~0.9x PyTorch's time instead of
// 7.2x (bench/bench_vs_torch.py), 256^3 33 us vs 273 us, 128^3 8.9 us vs 48 us,
// bmm 16 x 128^3 98 us vs 830 us, 256x784 @ 784x512 250 us vs 1.7 ms.
// On that Intel CPU the kernels without AMX lost (standalone program,
// ONEDNN_MAX_CPU_ISA, against the same widen + sgemm + round): AVX512_CORE_BF16
// (Cooper Lake's kernels, brg:avx512_core_bf16) 1.5-1.9x slower from 48^3 up
// (512^3 3.1 ms vs 2.0 ms), AVX512_CORE (gemm:jit, bfloat16 emulated) ~4x
// slower, and for AVX2 it has no bfloat16 matmul at all. On AMD Zen 4
// (avx512_bf16, no AMX; 512-bit operations take two cycles there, so one
// bfloat16 dot-product instruction does twice a float32 FMA's multiply-adds)
// the same brg:avx512_core_bf16 kernel wins instead: 1 thread, 64^3 6.5 us vs
// 8.4 us, 128^3 25 us vs 50 us, 256^3 169 us vs 354 us, 512^3 1.3 ms vs
// 2.7 ms (0.93x PyTorch's time; 2.2x on the float32 path). So a problem runs
// here when oneDNN picks an AMX kernel for it, or its AVX512-BF16 kernel on an
// AMD CPU (kernel_wins below); every other answer is a refusal and the caller
// keeps its float32 path. Also refused by oneDNN's choice: products it gives a
// lesser kernel even on such a CPU (M < 8, or all sizes <= ~16).
// float32 products (matmul_f32) run here where oneDNN picks its
// brg:avx512_core kernel, on any vendor's CPU. On Zen 4 (1 thread, standalone
// program against OpenBLAS 0.3.21's SkylakeX sgemm) 256x784 @ 784x512 1.85 ms
// vs 1.98 ms, 256x512 @ 512x512 1.18 vs 1.28 ms, 512^3 2.40 vs 2.55 ms,
// 256x512 @ 512x10 36 vs 53 us; batched, 16 x 128^3 through bmm in Python
// 598-606 vs 698-702 us (TESSERA_CPU_ONEDNN=0; PyTorch 716-744 us in the same
// processes). On an Intel Xeon (Emerald Rapids, 2 cores; bench_vs_torch.py
// --filter '^(mm 512|bmm|MLP)', two runs per setting alternating, ratios to
// PyTorch's MKL): 512^3 1.04x-1.19x on OpenBLAS, 1.04x with this kernel at 1
// thread, 1.21x-1.25x against 1.02x at 2; bmm 16 x 128^3 1.18x-1.22x against
// 0.95x-1.05x, 1.15x-1.33x against 0.97x-1.08x; the MLP step 0.97x-1.11x
// against 0.82x-0.99x, 1.01x-1.03x against 0.90x-0.94x.
// oneDNN 2.6 has no float16 matmul on the CPU (creating one throws "could not
// create a primitive descriptor iterator"), so float16 stays on the float32
// path. OpenBLAS's cblas_sbgemm was the other candidate for bfloat16: Debian's
// 0.3.21 build (libopenblas0-openmp and -pthread) is made without
// BUILD_BFLOAT16 and does not export it.
//
// Operands are first handed over as they lie in memory (strides of size-1
// dims canonicalized; a broadcast batch, stride 0, is a batch dim of 1, which
// oneDNN broadcasts). oneDNN 2.6's AMX and AVX512-BF16 kernels take only
// unpadded layouts: dense rows or dense columns with the leading dimension
// equal to the dim, and dense batches; for anything else (a column slice, a stepped or interleaved
// view) it offers gemm:jit or ref. Then the plan packs the odd operands with
// oneDNN reorders into dense ones (a memory-bound copy, far cheaper than the
// float32 path's widening) and runs the fast kernel on those, the output
// through a dense buffer. Layouts oneDNN cannot describe at all (overlapping
// rows, zero or negative strides) are refused. oneDNN accumulates in float32
// and rounds each output element once to nearest even (or writes the float32
// sums, for addmm).
//
// Building a plan costs 150 us - 3 ms (more than a small product), so plans
// are cached per problem (sizes, normalized strides, output type, thread
// count) in a mutex-guarded LRU of 64 entries, refusals too.
// Threads: oneDNN (Debian's OpenMP build) runs on the calling thread's OpenMP
// team, the libgomp pool the other kernels and OpenBLAS use, of as many threads
// as the caller asks for (linalg.cpp: one per kOneDnnWorkPerThread multiply-adds,
// at most the idle cores), set with omp_set_num_threads for the call and
// restored after it: waking a team costs 2-10 us, more than a 64^3 product
// takes on one thread.
#include "matmul_onednn.hpp"

#if TESSERA_CPU_HAVE_ONEDNN
#include "onednn_support.hpp"
#include "parallel.hpp"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#endif

namespace tessera::cpu::onednn {

#if !TESSERA_CPU_HAVE_ONEDNN

bool matmul_available() { return false; }
bool matmul_bf16(const MatmulProblem&, const void*, const void*, void*, bool, int) { return false; }
bool matmul_f32_enabled() { return false; }
bool matmul_f32(const MatmulProblem&, const float*, const float*, float*, int) { return false; }

#else

namespace {

using support::cpu_engine;
using support::enabled_by_env;
using support::make_reorder;
using support::Step;

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// oneDNN's kernels index with int: every operand must span fewer elements.
constexpr int64_t kMaxSpan = int64_t{1} << 31;

// One operand as oneDNN sees it: dims and strides of batch x rows x cols
// (batch 1 when the operand is one matrix, broadcast or not).
struct Desc {
  int64_t dims[3];
  int64_t strides[3];
};

// Describes a batch x rows x cols operand with strides (sb, sr, sc), rows and
// cols >= 1. The strides of size-1 dims address nothing and are replaced by
// canonical ones, so that layouts that are the same to oneDNN share a cache
// entry. False: a zero or negative stride (other than a broadcast batch), or
// an operand that spans too much.
bool describe(int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr, int64_t sc, bool may_broadcast,
              Desc& d) {
  if (batch >= kMaxSpan || rows >= kMaxSpan || cols >= kMaxSpan) return false;
  if (cols == 1) sc = 1;
  if (rows == 1) sr = cols * sc;  // < 2^62
  if (sr <= 0 || sc <= 0 || sr >= kMaxSpan || sc >= kMaxSpan) return false;
  // Elements from the first to one past the last of one matrix.
  const int64_t span = (rows - 1) * sr + (cols - 1) * sc + 1;  // < 2^63: each term < 2^62
  if (span >= kMaxSpan) return false;
  d.dims[0] = batch;
  d.dims[1] = rows;
  d.dims[2] = cols;
  d.strides[1] = sr;
  d.strides[2] = sc;
  if (batch == 1 || sb == 0) {
    if (batch > 1 && !may_broadcast) return false;
    d.dims[0] = 1;  // one matrix; oneDNN broadcasts a batch dim of 1
    d.strides[0] = span;
    return true;
  }
  if (sb < 0 || sb >= kMaxSpan || (batch - 1) * sb >= kMaxSpan - span) return false;
  d.strides[0] = sb;
  return true;
}

memory::desc user_md(const Desc& d, bool batched, dt type) {
  if (!batched) return memory::desc({d.dims[1], d.dims[2]}, type, memory::dims{d.strides[1], d.strides[2]});
  return memory::desc({d.dims[0], d.dims[1], d.dims[2]}, type,
                      memory::dims{d.strides[0], d.strides[1], d.strides[2]});
}

// The operand packed densely: rows dense, or columns dense where the user's
// columns are (a transposed view then costs a plain copy, not a transpose).
memory::desc dense_md(const Desc& d, bool batched, dt type, bool allow_columns) {
  const bool columns = allow_columns && d.strides[1] < d.strides[2];
  if (!batched) return memory::desc({d.dims[1], d.dims[2]}, type, columns ? tag::ba : tag::ab);
  return memory::desc({d.dims[0], d.dims[1], d.dims[2]}, type, columns ? tag::acb : tag::abc);
}

// The problem a plan is built for: batch, M, N, K, the three operands' batch
// dims and strides (the matrix dims follow from M, N, K), the output type, the
// thread count (oneDNN sizes its work split when the primitive is created) and
// the operands' type.
using Key = support::Key<18>;

// A problem's primitives, immutable once built and shared by every thread
// that runs the problem. ok = false: refused.
struct Plan {
  bool ok = false;
  memory::desc a_user, b_user, c_user;  // the operands as they lie in memory
  memory::desc a_mm, b_mm, c_mm;        // as the matmul reads/writes them
  Step mm, a_in, b_in, c_out;           // a reorder is empty where the layouts agree
};

// Whether oneDNN's kernel `impl` (its implementation name) beats the float32
// OpenBLAS path on this CPU for operands of type `in` (measurements at the top
// of the file).
bool amd_cpu() {
  static const bool amd = __builtin_cpu_is("amd");
  return amd;
}
bool kernel_wins(const std::string& impl, dt in) {
  if (in == dt::f32) return impl.find("brg:avx512_core") != std::string::npos;
  if (impl.find("amx") != std::string::npos) return true;
  return amd_cpu() && impl.find("avx512_core_bf16") != std::string::npos;
}

// The matmul for these layouts if oneDNN runs it on a kernel that beats the
// float32 fallback (kernel_wins), else an empty Step.
Step make_fast_matmul(const memory::desc& a, const memory::desc& b, const memory::desc& c,
                      const dnnl::primitive_attr& attr) {
  try {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
    if (!kernel_wins(pd.impl_info_str(), a.data_type())) return {};
    return {dnnl::matmul(pd), pd.scratchpad_desc()};
  } catch (const dnnl::error&) {
    return {};  // no implementation at all for these layouts
  }
}

std::shared_ptr<const Plan> build_plan(const Desc& a, const Desc& b, const Desc& c, bool batched, dt in,
                                       bool f32_out) {
  auto plan = std::make_shared<Plan>();
  try {
    const dt c_type = f32_out ? dt::f32 : in;
    plan->a_user = user_md(a, batched, in);
    plan->b_user = user_md(b, batched, in);
    plan->c_user = user_md(c, batched, c_type);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // The operands as they are: oneDNN 2.6's AMX and AVX512-BF16 kernels take
    // dense rows or dense columns with no padding (leading dimension = the dim)
    // and dense batches; anything else gets its slow gemm:jit or ref kernel.
    plan->mm = make_fast_matmul(plan->a_user, plan->b_user, plan->c_user, attr);
    if (plan->mm) {
      plan->a_mm = plan->a_user;
      plan->b_mm = plan->b_user;
      plan->c_mm = plan->c_user;
    } else {
      // Else packed: a copy (a oneDNN reorder, memory-bound) costs far less
      // than the float32 path's widening, and the same kernels then run.
      plan->a_mm = dense_md(a, batched, in, true);
      plan->b_mm = dense_md(b, batched, in, true);
      plan->c_mm = dense_md(c, batched, c_type, false);
      if (plan->a_mm == plan->a_user && plan->b_mm == plan->b_user && plan->c_mm == plan->c_user)
        return std::make_shared<Plan>();  // the same layouts, refused above
      plan->mm = make_fast_matmul(plan->a_mm, plan->b_mm, plan->c_mm, attr);
      if (!plan->mm) return std::make_shared<Plan>();
      plan->a_in = make_reorder(plan->a_user, plan->a_mm, attr);
      plan->b_in = make_reorder(plan->b_user, plan->b_mm, attr);
      plan->c_out = make_reorder(plan->c_mm, plan->c_user, attr);
    }
    plan->ok = true;
  } catch (const dnnl::error&) {
    // Refused (layout, sizes, no bfloat16 kernel on this CPU): the caller's
    // float32 path handles it. DNNL_VERBOSE=1 shows oneDNN's reasons.
    return std::make_shared<Plan>();
  }
  return plan;
}

support::PlanCache<18, Plan>& plan_cache() {
  static support::PlanCache<18, Plan> cache;
  return cache;
}

}  // namespace

bool matmul_available() {
  static const bool on = enabled_by_env();
  return on;
}

namespace {

// c = a @ b for operands of type `in` (c of type `in`, or float32 with f32_out).
bool run_matmul(const MatmulProblem& p, dt in, const void* a, const void* b, void* c, bool f32_out, int threads) {
  if (!matmul_available()) return false;
  if (p.batch <= 0 || p.M <= 0 || p.N <= 0 || p.K <= 0) return false;  // nothing to multiply: the caller's business
  Desc da, db, dc;
  if (!describe(p.batch, p.M, p.K, p.a_sb, p.a_sr, p.a_sc, true, da) ||
      !describe(p.batch, p.K, p.N, p.b_sb, p.b_sr, p.b_sc, true, db) ||
      !describe(p.batch, p.M, p.N, p.c_sb, p.c_sr, p.c_sc, false, dc))
    return false;
  const bool batched = p.batch > 1;
  // oneDNN (OpenMP runtime) sizes its team by omp_get_max_threads(), when the
  // primitive is built and when it runs: set it for the call, then restore it.
  const ThreadLimit thread_limit(threads);
  const int nthr = omp_get_max_threads();
  const Key key{p.batch,       p.M,           p.N,           p.K,           da.dims[0],    da.strides[0],
                da.strides[1], da.strides[2], db.dims[0],    db.strides[0], db.strides[1], db.strides[2],
                dc.strides[0], dc.strides[1], dc.strides[2], f32_out,       nthr,
                static_cast<int64_t>(in)};
  try {
    const std::shared_ptr<const Plan> plan =
        plan_cache().get(key, [&] { return build_plan(da, db, dc, batched, in, f32_out); });
    if (!plan->ok) return false;
    support::Runner r({&plan->mm, &plan->a_in, &plan->b_in, &plan->c_out});
    const memory a_user = r.wrap(plan->a_user, const_cast<void*>(a));
    const memory b_user = r.wrap(plan->b_user, const_cast<void*>(b));
    const memory c_user = r.wrap(plan->c_user, c);
    const memory a_mm = r.stage(plan->a_in, plan->a_mm, 0, a_user);
    const memory b_mm = r.stage(plan->b_in, plan->b_mm, 1, b_user);
    const memory c_mm = r.stage(plan->c_out, plan->c_mm, 2, c_user);
    if (plan->a_in) r.run(plan->a_in, {{DNNL_ARG_FROM, a_user}, {DNNL_ARG_TO, a_mm}});
    if (plan->b_in) r.run(plan->b_in, {{DNNL_ARG_FROM, b_user}, {DNNL_ARG_TO, b_mm}});
    r.run(plan->mm, {{DNNL_ARG_SRC, a_mm}, {DNNL_ARG_WEIGHTS, b_mm}, {DNNL_ARG_DST, c_mm}});
    if (plan->c_out) r.run(plan->c_out, {{DNNL_ARG_FROM, c_mm}, {DNNL_ARG_TO, c_user}});
    r.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller recomputes the whole output
  }
}

}  // namespace

bool matmul_bf16(const MatmulProblem& p, const void* a, const void* b, void* c, bool f32_out, int threads) {
  return run_matmul(p, dt::bf16, a, b, c, f32_out, threads);
}

bool matmul_f32_enabled() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");  // brg:avx512_core needs it
  return avx512 && matmul_available();
}

bool matmul_f32(const MatmulProblem& p, const float* a, const float* b, float* c, int threads) {
  if (!matmul_f32_enabled()) return false;
  return run_matmul(p, dt::f32, a, b, c, true, threads);
}

#endif  // TESSERA_CPU_HAVE_ONEDNN

}  // namespace tessera::cpu::onednn
