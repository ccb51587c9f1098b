/*
 * abi_layout_dump.c — prints the layout of <tessera/abi.h> as this C compiler
 * sees it: sizeof, alignment and frozen/growable kind of every struct, offset,
 * size and type of every field, size and type of every typedef, value of every
 * constant. The list of what to print is abi_manifest.h.
 *
 * abi_layout_compare checks the output against the committed baseline
 * abi_1_0_layout.txt (the ctest `abi.layout_baseline`). To see the listing:
 *     build/release/tests/abi/abi_layout_dump
 *
 * Exit status: 0 on success; 77 (ctest: skipped) on a platform that is not LP64,
 * whose layout the baseline does not describe; 3 when a struct is larger than
 * its listed fields explain (a field was added to abi.h but not to
 * abi_manifest.h).
 *
 * C99 on purpose: the layout that matters is the one a C plugin gets.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tessera/abi.h>

static int g_status = 0;
static size_t g_fields_end = 0; /* end of the furthest listed field of the current struct */

static void field(const char* s, const char* path, size_t offset, size_t size, const char* type) {
  printf("  field %s.%s offset %lu size %lu type %s\n", s, path, (unsigned long)offset, (unsigned long)size, type);
  if (offset + size > g_fields_end) g_fields_end = offset + size;
}

static void end_struct(const char* s, size_t size, size_t align) {
  size_t explained = (g_fields_end + align - 1) / align * align;
  if (size != explained) {
    fprintf(stderr,
            "abi_layout_dump: sizeof(%s) is %lu but its listed fields end at %lu (%lu with padding):\n"
            "  a field was added to %s in abi.h but not to tests/abi/abi_manifest.h.\n"
            "  Append it there (at the end of the struct's block), then to abi_1_0_layout.txt.\n",
            s, (unsigned long)size, (unsigned long)g_fields_end, (unsigned long)explained, s);
    g_status = 3;
  }
  printf("\n");
}

int main(void) {
#if !(defined(__LP64__) || defined(_WIN64))
  printf("# not an LP64 platform: the ABI 1.0 baseline describes LP64 only\n");
  return 77;
#else
  printf("# Tessera C ABI layout, printed by tests/abi/abi_layout_dump.c (C99, LP64)\n");
  printf("# abi.h version %d.%d\n\n", TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR);

#define TSR_M_STRUCT(S, kind)                                                              \
  {                                                                                        \
    struct tsr_align_probe { char c; S s; };                                               \
    const size_t tsr_size = sizeof(S);                                                     \
    const size_t tsr_align = offsetof(struct tsr_align_probe, s);                          \
    g_fields_end = 0;                                                                      \
    printf("struct %s " #kind " size %lu align %lu\n", #S, (unsigned long)tsr_size, (unsigned long)tsr_align);
#define TSR_M_FIELD(S, path, T) field(#S, #path, offsetof(S, path), sizeof(((S*)0)->path), #T);
#define TSR_M_FIELD_UNTYPED(S, path, text) field(#S, #path, offsetof(S, path), sizeof(((S*)0)->path), text);
#define TSR_M_END(S)                          \
    end_struct(#S, tsr_size, tsr_align);      \
  }
#define TSR_M_TYPEDEF(name, T) printf("typedef %s size %lu type %s\n", #name, (unsigned long)sizeof(name), #T);
#define TSR_M_CONST(name) \
  printf("const %s value %lld size %lu\n", #name, (long long)(name), (unsigned long)sizeof(name));
#define TSR_M_CONST_MIN(name) \
  printf("const-min %s value %lld size %lu\n", #name, (long long)(name), (unsigned long)sizeof(name));
#define TSR_M_CONST_EXPR(label, expr) \
  printf("const %s value %lld size %lu\n", #label, (long long)(expr), (unsigned long)sizeof(expr));
#define TSR_M_CONST_STR(name) printf("const-str %s value \"%s\"\n", #name, name);

#include "abi_manifest.h"

  return g_status;
#endif
}
