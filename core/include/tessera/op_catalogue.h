// tessera/op_catalogue.h — the version of the op catalogue this core declares.
#pragma once

namespace tessera {

/// The version of the op catalogue: the ops of the library (every family's,
/// structured and composite, in-place variants included) with their schemas,
/// as recorded in tests/abi/op_catalogue_v<N>.txt. A released op keeps its name
/// and only gains trailing arguments with defaults; ops are never removed; any
/// change to the catalogue is a new version (docs/abi.md §6, "The op catalogue").
/// `tessera info` prints it on its first line.
int op_catalogue_version();

}  // namespace tessera
