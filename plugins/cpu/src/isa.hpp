// The instruction set the including file's kernels are compiled for.
//
// The kernel files are compiled once per x86-64 level (CMakeLists.txt: baseline
// x86-64, AVX2 = x86-64-v3, AVX-512 = x86-64-v4), each time with
// -DTSR_CPU_ISA=<namespace>, and everything they define lives in the inline
// namespace tessera::cpu::TSR_CPU_ISA. So each compilation's functions, inline
// ones and template instantiations included, have names of their own: the
// linker never merges an AVX-512 copy of a helper into the baseline kernels.
// isa_dispatch.cpp picks one compilation's kernels when the plugin loads.
// Files compiled once (device.cpp, plugin.cpp) get the baseline namespace.
#pragma once

#ifndef TSR_CPU_ISA
#define TSR_CPU_ISA isa_baseline
#endif
