// memory/call_stack.cpp — capture with backtrace(), symbolize with dladdr().
#include "call_stack.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tessera::memory {

std::shared_ptr<const StackContext> capture_stack(const void* outermost_own, int max_frames,
                                                  const ContextRecorder* recorder) {
  auto ctx = std::make_shared<StackContext>();
  // Found by address, not by a frame count: inlining and sanitizer interceptors
  // change how many frames lie between here and the allocator's caller.
  constexpr int kOwnFrames = 8;
  void* buf[64 + kOwnFrames];
  const int n = backtrace(buf, std::min(64, max_frames) + kOwnFrames);
  int first = std::min(n, 1);
  for (int i = 0; i < n && i < kOwnFrames; ++i)
    if (buf[i] == outermost_own) {
      first = i;
      break;
    }
  ctx->cpp.assign(buf + first, buf + std::min(n, first + max_frames));
  if (recorder != nullptr && *recorder) ctx->frames = (*recorder)();
  return ctx;
}

std::vector<Frame> Symbolizer::frames(const StackContext* context) {
  std::vector<Frame> out;
  if (context == nullptr) return out;
  out.reserve(context->cpp.size() + context->frames.size());
  for (void* addr : context->cpp) {
    auto it = cache_.find(addr);
    if (it == cache_.end()) {
      Frame f;
      Dl_info info{};
      // A return address points after the call; -1 lands inside the calling function.
      void* const probe = static_cast<char*>(addr) - 1;
      if (dladdr(probe, &info) != 0) {
        if (info.dli_fname != nullptr) f.filename = info.dli_fname;
        if (info.dli_sname != nullptr) {
          int status = 0;
          char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
          f.name = (status == 0 && demangled != nullptr) ? demangled : info.dli_sname;
          std::free(demangled);
        }
      }
      if (f.name.empty()) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
        char hex[32];
        std::snprintf(hex, sizeof hex, "0x%zx", static_cast<size_t>(reinterpret_cast<uintptr_t>(addr) - base));
        f.name = std::string("?? +") + hex;
      }
      it = cache_.emplace(addr, std::move(f)).first;
    }
    out.push_back(it->second);
  }
  out.insert(out.end(), context->frames.begin(), context->frames.end());
  return out;
}

}  // namespace tessera::memory
