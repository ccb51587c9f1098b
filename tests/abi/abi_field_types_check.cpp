// abi_field_types_check.cpp — compiled (not run) by the ctest `abi.field_types`:
// every field and typedef of <tessera/abi.h> listed in abi_manifest.h must have
// exactly the C type written there. Sizes and offsets (abi.layout_baseline)
// cannot see a retyped field of the same size — int32_t turned uint32_t, or a
// function pointer that gained or lost a parameter — and a changed signature
// is as much an ABI break as a moved field. A failure names the field.
#include <tessera/abi.h>

#include <type_traits>

#define TSR_M_STRUCT(S, kind)
#define TSR_M_END(S)
#define TSR_M_FIELD(S, path, T)                                                             \
  static_assert(std::is_same<decltype(static_cast<S*>(nullptr)->path), T>::value,           \
                "ABI break: field " #S "." #path " no longer has type " #T                   \
                " (fields of ABI 1.x never change type; see docs/abi.md)");
#define TSR_M_FIELD_UNTYPED(S, path, text)
#define TSR_M_TYPEDEF(name, T)                                                              \
  static_assert(std::is_same<name, T>::value,                                               \
                "ABI break: typedef " #name " is no longer " #T " (see docs/abi.md)");
#define TSR_M_CONST(name)
#define TSR_M_CONST_MIN(name)
#define TSR_M_CONST_EXPR(label, expr)
#define TSR_M_CONST_STR(name)

#include "abi_manifest.h"

// The entry point's signature is frozen across majors (abi.h, TsrPluginEntryFn).
static_assert(std::is_same<TsrPluginEntryFn, const TsrPluginInfo* (*)(const TsrHostOffer*)>::value,
              "ABI break: the plugin entry point's signature is frozen forever");

int tsr_abi_field_types_check_anchor;
