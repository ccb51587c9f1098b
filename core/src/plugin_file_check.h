// Internal: the checks a plugin file passes before the host hands it to dlopen.
//
// dlopen trusts the file: a truncated library (a copy cut short, a build still
// being written) makes the dynamic loader touch mapped pages past the end of the
// file, and the process dies of SIGBUS inside dlopen — no error, no message.
// So the host first reads the file's ELF headers and refuses, with a reason,
// anything whose loadable parts do not lie within the file, and files built for
// another class, byte order or machine, or that are not shared libraries.
//
// This is a check against damaged and mistaken files, not against malicious
// ones: a plugin is code the host runs, and a file built to do harm can do so
// from its initializers without any malformed header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::detail {

/// Whether the bytes data[0, size) — the whole content of a file — look like an
/// ELF shared library this host can load: ELF magic; this host's class (64-bit
/// on LP64), byte order and ELF version; type ET_DYN; this host's machine; a
/// program header table within the file with at least one PT_LOAD; every
/// PT_LOAD's file bytes [p_offset, p_offset + p_filesz) within the file and
/// p_filesz <= p_memsz; one PT_DYNAMIC whose bytes lie within the file and
/// inside a PT_LOAD, ending in DT_NULL, whose address entries (string and
/// symbol tables, relocations, init/fini arrays, hash tables, version tables)
/// lie in loaded segments and whose string table ends in NUL; and, when there
/// are section headers, the table and every section's file bytes within the
/// file. All arithmetic on offsets and sizes is overflow-checked.
///
/// Returns "" when the file passes, else the reason in words, without the path
/// (e.g. "truncated: PT_LOAD segment 2 ends at byte 13648, the file is 1000
/// bytes", "built for aarch64, this host is x86-64", "not a shared library
/// (ET_EXEC: an executable)", "not an ELF file").
///
/// Pure: reads only data[0, size) (data may be null when size is 0), does no
/// I/O, and accepts any bytes (it is a fuzzing target). Thread-safe. Never
/// throws except std::bad_alloc while building the message.
std::string check_plugin_image(const unsigned char* data, size_t size);

/// What identifies the file a check read: compared again just before dlopen.
struct PluginFileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
  bool operator==(const PluginFileIdentity&) const = default;
};

/// Opens `path` (without blocking, so a FIFO cannot hang the host), refuses
/// anything but a regular, readable, non-empty file, maps it read-only and runs
/// check_plugin_image over it. Returns "" or the reason, without the path ("a
/// directory, not a plugin file", "cannot open it: Permission denied", "not a
/// loadable shared library (<check_plugin_image's reason>)"), and stores the
/// identity of the file it read in *identity. Thread-safe; throws only
/// std::bad_alloc.
std::string check_plugin_file(const std::string& path, PluginFileIdentity* identity);

/// The identity of the file now at `path` (following symlinks); false if it
/// cannot be stat'ed.
bool plugin_file_identity(const std::string& path, PluginFileIdentity* identity);

}  // namespace tessera::detail
