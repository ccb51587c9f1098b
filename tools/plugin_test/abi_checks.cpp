// The kit's ABI checks (docs/conformance.md), run first in test mode:
//   exports     — the plugin's file exports one symbol, tessera_plugin_entry;
//   no-core     — it does not link libtessera (nor another plugin);
//   version     — the ABI version it answers is within the host's offer;
//   struct_size — TsrPluginInfo, TsrDeviceTypeDesc, TsrKernelDesc and TsrOpDesc
//                 carry the size the header gives for the minor it claims;
//   loads       — it loads beside cpu and meta;
// and last, after the cases:
//   shutdown    — unloaded while one of its tensors lives, the tensor still
//                 reads, and the library goes only after that tensor does.
// The struct sizes come from a private probe: a copy of the file is dlopened
// (its own statics, apart from the loaded instance) and initialized against a
// host that records every registration, then shut down.
#include <tessera/abi.h>
#include <tessera/tessera.h>

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "runner.h"

namespace tessera::kit {

namespace {

using Status = CaseResult::Status;

void add(Report& r, const char* check, Status st, std::string msg) {
  r.results.push_back({"ABI", "-", "the plugin file", check, st, std::move(msg), 0});
}

// The file's dynamic symbols (defined ones) and DT_NEEDED entries, read with
// <elf.h> from the file itself (64-bit ELF; the loader refuses other files).
bool read_dynamic(const std::string& path, std::set<std::string>& exports, std::vector<std::string>& needed,
                  std::string& error) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0 ||
      bytes[EI_CLASS] != ELFCLASS64) {
    error = "not a 64-bit ELF file";
    return false;
  }
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  auto section = [&](size_t i) -> const Elf64_Shdr* {
    const size_t off = eh->e_shoff + i * eh->e_shentsize;
    if (i >= eh->e_shnum || off + sizeof(Elf64_Shdr) > bytes.size()) return nullptr;
    return reinterpret_cast<const Elf64_Shdr*>(bytes.data() + off);
  };
  auto str = [&](const Elf64_Shdr* strtab, size_t at) -> std::string {
    if (strtab == nullptr || strtab->sh_offset + at >= bytes.size()) return {};
    const char* p = bytes.data() + strtab->sh_offset + at;
    return std::string(p, strnlen(p, bytes.size() - strtab->sh_offset - at));
  };
  bool have_dynsym = false;
  for (size_t i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr* sh = section(i);
    if (sh == nullptr || sh->sh_offset + sh->sh_size > bytes.size()) {
      error = "a section lies outside the file";
      return false;
    }
    if (sh->sh_type == SHT_DYNSYM) {
      have_dynsym = true;
      const Elf64_Shdr* strtab = section(sh->sh_link);
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(bytes.data() + sh->sh_offset);
      for (size_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); ++k) {
        const Elf64_Sym& s = syms[k];
        const unsigned bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
        if (s.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)) continue;
        if (type == STT_SECTION || type == STT_FILE) continue;
        const std::string name = str(strtab, s.st_name);
        if (name.empty() || name == "_init" || name == "_fini" || name == "__bss_start" || name == "_edata" ||
            name == "_end")
          continue;
        exports.insert(name);
      }
    } else if (sh->sh_type == SHT_DYNAMIC) {
      const Elf64_Shdr* strtab = section(sh->sh_link);
      const auto* dyn = reinterpret_cast<const Elf64_Dyn*>(bytes.data() + sh->sh_offset);
      for (size_t k = 0; k < sh->sh_size / sizeof(Elf64_Dyn); ++k)
        if (dyn[k].d_tag == DT_NEEDED) needed.push_back(str(strtab, dyn[k].d_un.d_val));
    }
  }
  if (!have_dynsym) {
    error = "no dynamic symbol table";
    return false;
  }
  return true;
}

// ---- the private probe --------------------------------------------------------

struct Probe {
  std::vector<size_t> device_sizes, kernel_sizes, op_sizes;
  std::string error;
};
thread_local Probe* t_probe = nullptr;

TsrError* probe_register_device_type(TsrHostContext, const TsrDeviceTypeDesc* d) {
  t_probe->device_sizes.push_back(d->struct_size);
  return nullptr;
}
TsrError* probe_register_kernel(TsrHostContext, const TsrKernelDesc* k) {
  t_probe->kernel_sizes.push_back(k->struct_size);
  return nullptr;
}
TsrError* probe_register_op(TsrHostContext, const TsrOpDesc* d) {
  t_probe->op_sizes.push_back(d != nullptr ? d->struct_size : 0);
  return nullptr;
}
void probe_log(TsrHostContext, int32_t, const char*) {}

// A plugin of the host's minor must carry the header's size; an older one a
// size up to it that covers the fields every version has (`least`).
bool size_ok(size_t got, size_t least, size_t now, uint32_t minor) {
  if (minor >= TSR_ABI_VERSION_MINOR) return got == now;
  return got >= least && got <= now;
}

}  // namespace

void run_abi_checks(const Target& target, Report& r) {
  const std::string& path = target.plugin.path;
  // exports and no-core
  std::set<std::string> exports;
  std::vector<std::string> needed;
  std::string error;
  if (!read_dynamic(path, exports, needed, error)) {
    add(r, "exports", Status::Fail, path + ": " + error);
  } else {
    std::string list;
    for (const std::string& e : exports) list += (list.empty() ? "" : ", ") + e;
    if (exports == std::set<std::string>{"tessera_plugin_entry"})
      add(r, "exports", Status::Pass, "exports tessera_plugin_entry only");
    else
      add(r, "exports", Status::Fail, "exports " + std::to_string(exports.size()) + " symbols (" +
                                          list.substr(0, 400) + "); a plugin exports tessera_plugin_entry only "
                                          "(the SDK's version script, docs/plugin-guide.md)");
    std::string core;
    for (const std::string& n : needed)
      if (n.rfind("libtessera.so", 0) == 0 || n.rfind("libtessera-", 0) == 0) core += (core.empty() ? "" : ", ") + n;
    if (core.empty()) add(r, "no-core", Status::Pass, "links no Tessera library");
    else add(r, "no-core", Status::Fail, "links " + core + ": a plugin talks to the core through the C ABI only");
  }

  // version
  const uint32_t major = abi_version_major(), minor = abi_version_minor();
  if (target.plugin.abi_major == major && target.plugin.abi_minor <= minor)
    add(r, "version", Status::Pass, "ABI " + std::to_string(target.plugin.abi_major) + "." +
                                        std::to_string(target.plugin.abi_minor) + " within the host's 1.0-1." +
                                        std::to_string(minor));
  else
    add(r, "version", Status::Fail, "answers ABI " + std::to_string(target.plugin.abi_major) + "." +
                                        std::to_string(target.plugin.abi_minor) + ", outside the host's " +
                                        std::to_string(major) + ".0-" + std::to_string(major) + "." +
                                        std::to_string(minor));

  // struct_size, through a private copy of the file
  char tmpl[] = "/tmp/tessera-plugin-probe-XXXXXX.so";
  const int fd = mkstemps(tmpl, 3);
  if (fd < 0) {
    add(r, "struct_size", Status::Skip, "no temporary file for the probe copy");
  } else {
    {
      std::ifstream in(path, std::ios::binary);
      std::ofstream out(tmpl, std::ios::binary);
      out << in.rdbuf();
    }
    ::close(fd);
    void* lib = dlopen(tmpl, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      add(r, "struct_size", Status::Skip, std::string("the probe copy does not load: ") + dlerror());
    } else {
      using Entry = const TsrPluginInfo* (*)(const TsrHostOffer*);
      auto entry = reinterpret_cast<Entry>(dlsym(lib, "tessera_plugin_entry"));
      TsrHostOffer offer{sizeof(TsrHostOffer), {major, 0}, {major, minor}};
      const TsrPluginInfo* info = entry ? entry(&offer) : nullptr;
      if (info == nullptr) {
        add(r, "struct_size", Status::Fail, "tessera_plugin_entry returned NULL to a host offering 1.0-1." +
                                                std::to_string(minor));
      } else {
        Probe probe;
        t_probe = &probe;
        TsrHostApi api{};
        api.struct_size = sizeof(TsrHostApi);
        api.host_version = {major, minor};
        api.register_device_type = &probe_register_device_type;
        api.register_kernel = &probe_register_kernel;
        api.log = &probe_log;
        api.register_op = &probe_register_op;
        void* state = nullptr;
        TsrError* err = info->initialize ? info->initialize(&api, &state) : nullptr;
        if (err != nullptr) {
          add(r, "struct_size", Status::Skip,
              std::string("the plugin's initialize failed against the probe host: ") + (err->message ? err->message : ""));
          if (err->destroy) err->destroy(err);
        } else if (info->shutdown) {
          info->shutdown(state);
        }
        t_probe = nullptr;
        const uint32_t claimed = info->abi_version.minor;
        std::string bad;
        if (!size_ok(info->struct_size, offsetof(TsrPluginInfo, shutdown) + sizeof(void*), sizeof(TsrPluginInfo), claimed))
          bad += "TsrPluginInfo.struct_size " + std::to_string(info->struct_size) + " (the header: " +
                 std::to_string(sizeof(TsrPluginInfo)) + "); ";
        for (size_t s : probe.device_sizes)
          if (!size_ok(s, offsetof(TsrDeviceTypeDesc, copy) + sizeof(void*), sizeof(TsrDeviceTypeDesc), claimed))
            bad += "TsrDeviceTypeDesc.struct_size " + std::to_string(s) + " (the header: " +
                   std::to_string(sizeof(TsrDeviceTypeDesc)) + "); ";
        for (size_t s : probe.kernel_sizes)
          if (!size_ok(s, offsetof(TsrKernelDesc, fn) + sizeof(void*), sizeof(TsrKernelDesc), claimed))
            bad += "TsrKernelDesc.struct_size " + std::to_string(s) + " (the header: " +
                   std::to_string(sizeof(TsrKernelDesc)) + "); ";
        // TsrOpDesc came in 1.3 with every field it has.
        for (size_t s : probe.op_sizes)
          if (!size_ok(s, sizeof(TsrOpDesc), sizeof(TsrOpDesc), claimed))
            bad += "TsrOpDesc.struct_size " + std::to_string(s) + " (the header: " + std::to_string(sizeof(TsrOpDesc)) +
                   "); ";
        if (bad.empty())
          add(r, "struct_size", Status::Pass, "TsrPluginInfo, " + std::to_string(probe.device_sizes.size()) +
                                                  " device types, " + std::to_string(probe.kernel_sizes.size()) +
                                                  " kernel registrations and " + std::to_string(probe.op_sizes.size()) +
                                                  " op definitions carry the header's sizes");
        else
          add(r, "struct_size", Status::Fail, bad + "set struct_size = sizeof(the struct) from the header you build with");
      }
      dlclose(lib);
    }
    ::unlink(tmpl);
  }

  // loads beside cpu and meta
  std::set<std::string> names;
  for (const PluginInfo& p : plugins()) names.insert(p.name);
  if (names.count("cpu") && names.count("meta") && names.count(target.plugin.name))
    add(r, "loads", Status::Pass, "loaded beside cpu and meta");
  else
    add(r, "loads", Status::Fail, "not loaded beside cpu and meta");
}

void run_unload_check(const Target& target, Report& r) {
  // Only a plugin that makes the device's memory can hold it past its unload.
  auto mapped = [&] {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find(target.plugin.path) != std::string::npos) return true;
    return false;
  };
  release_side_streams();
  if (target.device_type == "cpu") {
    add(r, "shutdown", Status::Skip, "not checked for cpu: reading the tensor back needs the cpu plugin itself");
    return;
  }
  try {
    Tensor t = ones({16}).to(target.device);
    unload_plugin(target.plugin.name);
    const bool readable = t.to(Device("cpu")).sum().item<double>() == 16.0;
    const bool still_mapped = mapped();
    t = Tensor();
    const bool gone = !mapped();
    if (readable && still_mapped && gone)
      add(r, "shutdown", Status::Pass, "unloaded with a live tensor: it still read right, and the library went "
                                       "(after shutdown) only when the tensor did");
    else
      add(r, "shutdown", Status::Fail, std::string("unloaded with a live tensor: ") +
                                           (readable ? "" : "the tensor no longer read right; ") +
                                           (still_mapped ? "" : "the library went while the tensor lived; ") +
                                           (gone ? "" : "the library stayed after the tensor went"));
  } catch (const std::exception& e) {
    add(r, "shutdown", Status::Skip, std::string("could not unload the plugin: ") + e.what());
  }
}

}  // namespace tessera::kit
