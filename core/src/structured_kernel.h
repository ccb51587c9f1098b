// Internal: the kernel every structured op's backend slots hold (structured.cpp),
// which the dispatcher installs at declaration and the pointwise lane recognizes.
#pragma once

#include <tessera/dispatcher.h>

namespace tessera {

/// The generic backend kernel installed for every structured op.
void run_structured(const Operator& op, DispatchKeySet ks, Frame& frame, void* context);
/// The KernelFunction (run_structured) that structured ops' backend slots hold
/// unless a kernel was registered over it. Lives as long as the process.
extern const KernelFunction g_structured_kernel;
inline const KernelFunction* structured_kernel_function() { return &g_structured_kernel; }

}  // namespace tessera
