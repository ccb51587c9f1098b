// Fuzz target: the plugin file pre-check (core/src/plugin_file_check.h), which
// reads a candidate plugin's bytes before anything dlopens it.
//
// Written against `std::string tessera::detail::check_plugin_image(const
// unsigned char* data, size_t size)`: an empty string when the image may be
// loaded, else the reason it may not. tests/fuzz/CMakeLists.txt builds it only
// once core/src/plugin_file_check.cpp exists. Properties:
//   - the check returns (or throws a tessera::Error); it never reads outside the
//     image (the input is an exactly sized buffer: AddressSanitizer builds catch
//     a read past it), crashes, hangs or throws anything else;
//   - it is deterministic;
//   - what is not a 64-bit ELF file (no "\x7fELF" magic, or shorter than an ELF
//     header) is refused, with a reason.
#include <tessera/error.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "fuzz_input.h"
#include "plugin_file_check.h"

namespace {

constexpr const char* kName = "plugin_file";
constexpr size_t kElf64HeaderSize = 64;

std::optional<std::string> check(const unsigned char* data, size_t size) {
  try {
    return tessera::detail::check_plugin_image(data, size);
  } catch (const tessera::Error&) {
    return std::nullopt;  // refused by throwing
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A private copy: the check gets exactly `size` readable bytes, also in the replay build.
  std::unique_ptr<unsigned char[]> image(new unsigned char[size == 0 ? 1 : size]);
  if (size != 0) std::memcpy(image.get(), data, size);
  const std::optional<std::string> first = check(image.get(), size);
  const std::optional<std::string> second = check(image.get(), size);
  TSR_FUZZ_CHECK(kName, first == second);
  const bool elf = size >= kElf64HeaderSize && std::memcmp(image.get(), "\x7f" "ELF", 4) == 0;
  if (!elf) TSR_FUZZ_CHECK(kName, !first || !first->empty());  // refused, with a reason
  return 0;
}
