/*
 * abidiff_probe.c — built by abidiff_check.cmake (test abi.abidiff) into a tiny
 * shared library whose DWARF holds every struct and typedef of <tessera/abi.h>,
 * so that `abidw` can dump them and `abidiff` compare them with the committed
 * baseline abidiff_baseline.abi.
 *
 * abidw only keeps types reachable from exported symbols, hence one exported
 * function per type. The list comes from abi_manifest.h (no second list to
 * drift); the check also verifies that every typedef abi.h declares shows up.
 * Structs are taken by pointer so that a struct growing changes only that
 * struct, not the probe functions' signatures.
 */
#include <tessera/abi.h>

#define TSR_M_STRUCT(S, kind) \
  TSR_PLUGIN_EXPORT void tsr_abidiff_##S(const S* p) { (void)p; }
#define TSR_M_FIELD(S, path, T)
#define TSR_M_FIELD_UNTYPED(S, path, text)
#define TSR_M_END(S)
#define TSR_M_TYPEDEF(name, T) \
  TSR_PLUGIN_EXPORT void tsr_abidiff_##name(name v) { (void)v; }
#define TSR_M_CONST(name)
#define TSR_M_CONST_MIN(name)
#define TSR_M_CONST_EXPR(label, expr)
#define TSR_M_CONST_STR(name)
#include "abi_manifest.h"
