// The plugin host: finds, loads and negotiates with plugins, takes their
// registrations (staged during initialize, committed only if it succeeds), and
// keeps each plugin's library loaded while anything it produced lives.
#define BOOST_DLL_USE_STD_FS 1
#include "plugin_host.h"

#include <tessera/dispatcher.h>
#include <tessera/error.h>
#include <tessera/op_catalogue.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include "abi_bridge.h"
#include "device_registry.h"
#include "env_settings.h"
#include "memory/device_allocators.h"
#include "memory/pinned_host_allocator.h"
#include "operator_slots.h"
#include "plugin_file_check.h"
#include "plugin_kernels.h"
#include "pointwise_lane.h"

namespace fs = std::filesystem;

namespace tessera {

void intrusive_ptr_add_ref(PluginRecord* p) { p->refs.fetch_add(1, std::memory_order_relaxed); }
void intrusive_ptr_release(PluginRecord* p) {
  // The host's list holds one reference until unload_plugin; storages hold the
  // others. The last one out shuts the plugin down and closes its library.
  if (p->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (p->info != nullptr && p->info->struct_size >= offsetof(TsrPluginInfo, shutdown) + sizeof(void*) &&
      p->info->shutdown != nullptr) {
    try {
      p->info->shutdown(p->state);
    } catch (...) {
      std::fprintf(stderr, "[tessera] plugin %s: shutdown threw a C++ exception across the C ABI\n", p->name.c_str());
    }
  }
  delete p;  // closes the library last (it holds the code we just ran)
}

PluginInfo PluginRecord::describe() const {
  PluginInfo out;
  out.name = name;
  out.version = version;
  out.description = description;
  out.path = path;
  out.abi_major = abi_version.major;
  out.abi_minor = abi_version.minor;
  out.device_types = device_types;
  out.kernels = kernels;
  out.warnings = warnings;
  out.ops = defined_ops::ops_of(this);
  return out;
}

uint32_t abi_version_major() { return TSR_ABI_VERSION_MAJOR; }
uint32_t abi_version_minor() { return TSR_ABI_VERSION_MINOR; }

namespace {

using Staging = PluginStaging;

struct HostState {
  std::recursive_mutex mutex;
  std::vector<PluginRecord*> plugins;  // never freed: the process keeps them loaded
  std::vector<std::string> load_errors;
  std::once_flag defaults_once;
  // The host contexts of live plugins. A host function checks its context here
  // before touching it, so NULL or a foreign pointer is refused without being
  // dereferenced. Its own lock: log may be called from any thread, any time.
  std::mutex contexts_mutex;
  std::vector<const Staging*> contexts;
};
HostState& host() {
  static HostState* s = new HostState();  // leaked on purpose: plugins outlive static destructors
  return *s;
}

bool verbose() {
  static const bool v = env::parse_switch(std::getenv("TESSERA_VERBOSE"));
  return v;
}

// The host's own log lines (plugins log through host_log).
void host_message(int32_t level, const std::string& text) {
  if (level < TSR_LOG_WARNING && !verbose()) return;
  std::fprintf(stderr, "[tessera] %s\n", text.c_str());
}

// The built-in plugins. Their device type names and DLPack device types are
// reserved: only the plugin of that name may register them, whatever the load
// order, so a stranger cannot take "cpu" or kDLCPU (NumPy arrays would import
// onto its device). Their files load before every other file of the default
// search path (load_default_plugins). An in-tree plugin added later goes here.
struct BuiltinPlugin {
  std::string_view plugin;
  std::string_view file;
};
constexpr BuiltinPlugin kBuiltinPlugins[] = {
    {"cpu", "libtessera-cpu.so"},
    {"cuda", "libtessera-cuda.so"},
    {"meta", "libtessera-meta.so"},
    {"sim", "libtessera-sim.so"}};
struct ReservedName {
  std::string_view device_type;
  std::string_view owner;
};
constexpr ReservedName kReservedDeviceTypes[] = {
    {"cpu", "cpu"}, {"cuda", "cuda"}, {"meta", "meta"}, {"sim", "sim"}};
struct ReservedDLPack {
  int32_t dlpack_device_type;
  std::string_view owner;
};
constexpr ReservedDLPack kReservedDLPackTypes[] = {
    {kDLCPU, "cpu"}, {kDLCUDA, "cuda"}, {kDLCUDAHost, "cuda"}, {kDLCUDAManaged, "cuda"}};

bool is_builtin_file(const fs::path& p) {
  const std::string file = p.filename().string();
  for (const BuiltinPlugin& b : kBuiltinPlugins)
    if (file == b.file) return true;
  return false;
}

// [a-z][a-z0-9_]*, at most 64 characters; reads at most 65 bytes of s.
bool valid_name(const char* s) {
  if (s == nullptr || !(*s >= 'a' && *s <= 'z')) return false;
  for (int i = 0; i <= 64; ++i) {
    const char c = s[i];
    if (c == '\0') return true;
    if (i == 64 || !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return false;
}

std::string dtype_mask_names(uint64_t mask, std::vector<std::string>* list = nullptr) {
  std::string s;
  for (int d = 0; d < kNumScalarTypes; ++d) {
    if (mask & TSR_DTYPE_BIT(d)) {
      std::string n(dtype_name(static_cast<ScalarType>(d)));
      if (list) list->push_back(n);
      s += (s.empty() ? "" : ", ") + n;
    }
  }
  return s;
}

// The dtypes the core ever calls `op`'s kernels with. A pointwise op with a
// lane declares the dtypes it computes in (PointwiseLane::dtypes) and its rule
// converts every other input into one of them first (exp of int64 runs in
// float32), so a kernel for another dtype is never called; a test checks this
// against what dispatch does for every such op and pair of dtypes. The lane of
// an op with an optional trailing argument covers only some of its calls (div
// with a rounding mode computes in integers), and ops without a lane declare
// nothing: for those every dtype counts as reachable.
uint64_t dispatch_dtype_mask(const Operator& op) {
  const uint64_t all = (uint64_t{1} << kNumScalarTypes) - 1;
  const PointwiseLane* lane = detail::OperatorSlots::pointwise_lane(op);
  if (lane == nullptr || lane->trailing == PointwiseLane::Trailing::NoneOnly) return all;
  return lane->dtypes;
}

// The staging behind a host context when it is a live plugin's; null for NULL,
// a pointer this host did not give out, or a plugin that is gone. Compares
// addresses only. Call with contexts_mutex held.
Staging* find_context(TsrHostContext ctx) {
  for (const Staging* s : host().contexts)
    if (reinterpret_cast<const void*>(s) == reinterpret_cast<const void*>(ctx)) return const_cast<Staging*>(s);
  return nullptr;
}

// The staging a registration may use, or the error refusing it: a context that
// is not a live plugin's, a call after initialize returned, or from a thread
// other than initialize's (the staging is not shared between threads).
TsrError* registration_context(TsrHostContext ctx, const char* fn, Staging** out) {
  Staging* st = nullptr;
  {
    std::lock_guard<std::mutex> lock(host().contexts_mutex);
    st = find_context(ctx);
  }
  if (st == nullptr)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           std::string(fn) + ": invalid host context (NULL, or not one this host gave out): pass "
                                             "host->context of the TsrHostApi given to initialize");
  const std::string who = "plugin '" + st->plugin->name + "': ";
  if (!st->open.load(std::memory_order_acquire))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + fn + " called after initialize returned");
  if (std::this_thread::get_id() != st->thread)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                           who + fn + " called from another thread than initialize's (registration happens on it only)");
  *out = st;
  return nullptr;
}

std::string dlpack_type_text(int32_t t) {
  switch (t) {
    case kDLCPU: return "1 (kDLCPU)";
    case kDLCUDA: return "2 (kDLCUDA)";
    case kDLCUDAHost: return "3 (kDLCUDAHost)";
    case kDLExtDev: return "12 (kDLExtDev)";
    case kDLCUDAManaged: return "13 (kDLCUDAManaged)";
    default: return std::to_string(t);
  }
}

TsrError* host_register_device_type(TsrHostContext ctx, const TsrDeviceTypeDesc* desc) {
  Staging* st = nullptr;
  if (TsrError* refused = registration_context(ctx, "register_device_type", &st)) return refused;
  const std::string who = "plugin '" + st->plugin->name + "'";
  if (desc == nullptr || desc->struct_size < offsetof(TsrDeviceTypeDesc, describe_device))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": register_device_type: description is NULL or too small");
  if (!valid_name(desc->name))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": device type name '" + (desc->name ? desc->name : "(null)") +
                                                           "' must match [a-z][a-z0-9_]* (at most 64 characters)");
  DeviceTypeEntry e;
  std::memcpy(&e.desc, desc, std::min(desc->struct_size, sizeof(TsrDeviceTypeDesc)));
  e.desc.struct_size = sizeof(TsrDeviceTypeDesc);
  e.name = desc->name;
  e.desc.name = nullptr;  // borrowed by the call only; we keep e.name
  e.plugin = st->plugin;
  e.plugin_name = st->plugin->name;
  const std::string dev = who + ": device type '" + e.name + "'";
  if (e.desc.device_count == nullptr) return make_host_error(TSR_ERROR_INVALID_ARGUMENT, dev + " has no device_count function");
  if (!e.no_storage() && (e.desc.allocate == nullptr || e.desc.deallocate == nullptr || e.desc.copy == nullptr))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, dev + " holds memory but lacks allocate, deallocate or copy");
  if (e.has(TSR_DEVICE_CAP_ASYNC) && !e.no_storage()) {
    const TsrDeviceTypeDesc& d = e.desc;
    if (!d.stream_create || !d.stream_destroy || !d.stream_synchronize || !d.stream_wait_event || !d.event_create ||
        !d.event_destroy || !d.event_record || !d.event_query || !d.event_synchronize || !d.device_synchronize)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                             dev + " is ASYNC but lacks a stream, event or device_synchronize function (all are "
                                   "required: docs/abi.md, device type)");
  }
  {  // 1.2 slot groups: all of a group or none of it
    const TsrDeviceTypeDesc& d = e.desc;
    const int va = !!d.va_granularity + !!d.va_reserve + !!d.va_release + !!d.va_map + !!d.va_unmap;
    if (va != 0 && va != 5)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                             dev + " provides " + std::to_string(va) +
                                 " of the 5 expandable-segment slots (va_granularity, va_reserve, va_release, va_map, "
                                 "va_unmap): all or none");
    if (!d.host_allocate != !d.host_deallocate)
      return make_host_error(TSR_ERROR_INVALID_ARGUMENT,
                             dev + " provides one of host_allocate and host_deallocate: both or neither");
  }
  if (e.desc.memory_alignment == 0 || (e.desc.memory_alignment & (e.desc.memory_alignment - 1)) != 0)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, dev + ": memory_alignment must be a power of two");
  if (e.desc.dlpack_device_type < 0)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, dev + ": dlpack_device_type " + std::to_string(e.desc.dlpack_device_type) +
                                                           " is negative (a DLDeviceType value, or 0)");
  for (const ReservedName& r : kReservedDeviceTypes)
    if (e.name == r.device_type && st->plugin->name != r.owner)
      return make_host_error(TSR_ERROR_ALREADY_EXISTS, dev + ": the name is reserved for the built-in plugin '" +
                                                           std::string(r.owner) + "'");
  for (const ReservedDLPack& r : kReservedDLPackTypes)
    if (e.desc.dlpack_device_type == r.dlpack_device_type && st->plugin->name != r.owner)
      return make_host_error(TSR_ERROR_ALREADY_EXISTS,
                             dev + ": DLPack device type " + dlpack_type_text(r.dlpack_device_type) +
                                 " is reserved for the built-in plugin '" + std::string(r.owner) +
                                 "' (a device whose memory is host memory registers 0 and HOST_ACCESSIBLE)");
  if (device_registry::find(e.name) != nullptr)
    return make_host_error(TSR_ERROR_ALREADY_EXISTS, dev + " is already registered by plugin '" +
                                                         device_registry::find(e.name)->plugin_name + "'");
  if (const DeviceTypeEntry* other = device_registry::find_dlpack(e.desc.dlpack_device_type))
    return make_host_error(TSR_ERROR_ALREADY_EXISTS, dev + ": DLPack device type " + dlpack_type_text(e.desc.dlpack_device_type) +
                                                         " is already taken by device type '" + other->name + "'");
  for (const auto& p : st->device_types) {
    if (p.name == e.name) return make_host_error(TSR_ERROR_ALREADY_EXISTS, dev + " registered twice");
    if (e.desc.dlpack_device_type != 0 && p.desc.dlpack_device_type == e.desc.dlpack_device_type)
      return make_host_error(TSR_ERROR_ALREADY_EXISTS, dev + ": DLPack device type " + dlpack_type_text(e.desc.dlpack_device_type) +
                                                           " is already taken by device type '" + p.name + "'");
  }
  st->device_types.push_back(std::move(e));
  return nullptr;
}

TsrError* host_register_kernel(TsrHostContext ctx, const TsrKernelDesc* desc) {
  Staging* st = nullptr;
  if (TsrError* refused = registration_context(ctx, "register_kernel", &st)) return refused;
  const std::string who = "plugin '" + st->plugin->name + "'";
  if (desc == nullptr || desc->struct_size < offsetof(TsrKernelDesc, context) + sizeof(void*))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": register_kernel: description is NULL or too small");
  if (desc->op_name == nullptr || desc->device_type == nullptr || desc->fn == nullptr)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, who + ": register_kernel: op_name, device_type and fn are required");
  const std::string what = who + ": kernel for op '" + desc->op_name + "' on '" + desc->device_type + "'";
  Operator* op = Dispatcher::instance().find(desc->op_name);
  const defined_ops::Definition* staged_op = nullptr;  // an op this initialize defined (register_op)
  for (const auto& d : st->ops)
    if (d->name == desc->op_name) staged_op = d.get();
  if (op == nullptr && staged_op == nullptr)
    return make_host_error(TSR_ERROR_NOT_FOUND, what + ": this core has no op named '" + desc->op_name + "'");
  if (staged_op != nullptr && (staged_op->flags & TSR_OP_VIEW))
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": '" + desc->op_name + "' is a VIEW op: the core makes its views and it takes no kernels");
  if (op != nullptr && !op->is_structured())
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": '" + desc->op_name + "' is implemented by the core for every device and takes no kernels");
  const DeviceTypeEntry* dev = device_registry::find(desc->device_type);
  const DeviceTypeEntry* pending = nullptr;
  for (const auto& p : st->device_types)
    if (p.name == desc->device_type) pending = &p;
  if (dev == nullptr && pending == nullptr) {
    // ABI 1.1 tells this apart from an unknown op (which a plugin skips); a
    // plugin that implements 1.0 gets 1.0's NOT_FOUND for both.
    const bool v1_1 = st->plugin->abi_version.minor >= 1;  // the major is ours (checked at load)
    return make_host_error(v1_1 ? TSR_ERROR_UNKNOWN_DEVICE_TYPE : TSR_ERROR_NOT_FOUND,
                           what + ": unknown device type '" + desc->device_type +
                               "': no loaded plugin registered it (a plugin adding kernels to another plugin's device "
                               "type must load after it: the built-in plugins load first, then the search path in order)");
  }
  const DeviceTypeEntry& d = dev ? *dev : *pending;
  if (d.no_storage())
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": device type '" + d.name + "' holds no memory; its ops run shape rules only");
  // Dtypes this core does not know (a newer plugin) are ignored, so the plugin
  // still loads with the ones it shares with us.
  const uint64_t known = (uint64_t{1} << kNumScalarTypes) - 1;
  if (desc->dtype_mask == 0)
    return make_host_error(TSR_ERROR_INVALID_ARGUMENT, what + ": dtype_mask is empty");
  const uint64_t mask = desc->dtype_mask & known;
  if (mask == 0)
    return make_host_error(TSR_ERROR_NOT_FOUND, what + ": none of its dtypes is known to this core");
  uint64_t taken = 0;
  if (dev != nullptr && op != nullptr) taken = registered_dtype_mask(*op, dev->id);
  for (const auto& k : st->kernels)
    if (k.op == desc->op_name && k.device_type == desc->device_type) taken |= k.dtype_mask;
  if (taken & mask)
    return make_host_error(TSR_ERROR_ALREADY_EXISTS, what + ": dtypes " + dtype_mask_names(taken & mask) +
                                                         " already have a kernel");
  st->kernels.push_back({desc->op_name, desc->device_type, mask, desc->fn, desc->context,
                         op != nullptr ? mask & ~dispatch_dtype_mask(*op) : 0});
  return nullptr;
}

TsrError* host_register_op(TsrHostContext ctx, const TsrOpDesc* desc) {
  Staging* st = nullptr;
  if (TsrError* refused = registration_context(ctx, "register_op", &st)) return refused;
  std::unique_ptr<defined_ops::Definition> def;
  if (TsrError* refused = defined_ops::validate(desc, st->plugin->name, st->ops, &def)) return refused;
  st->ops.push_back(std::move(def));
  return nullptr;
}

void host_log(TsrHostContext ctx, int32_t level, const char* message) {
  static const char* const names[] = {"debug", "info", "warning", "error"};
  const int32_t lv = std::clamp(level, TSR_LOG_DEBUG, TSR_LOG_ERROR);
  // Held while printing: the plugin (and its name) cannot go away meanwhile.
  std::lock_guard<std::mutex> lock(host().contexts_mutex);
  const Staging* st = find_context(ctx);
  if (st == nullptr) {
    char what[64] = "NULL";
    if (ctx != nullptr) std::snprintf(what, sizeof what, "%p, not one this host gave out", static_cast<void*>(ctx));
    std::fprintf(stderr,
                 "[tessera] log called with an invalid host context (%s): pass host->context of the TsrHostApi "
                 "given to initialize; the message: %s\n",
                 what, message ? message : "(null)");
    return;
  }
  if (lv < TSR_LOG_WARNING && !verbose()) return;
  std::fprintf(stderr, "[tessera] plugin %s %s: %s\n", st->plugin->name.c_str(), names[lv], message ? message : "(null)");
}

// A count the host cannot index (Device keeps 16 bits) or a negative one is
// refused: the type is listed with zero devices and the reason.
void query_device_count(DeviceTypeEntry& e, PluginRecord& rec) {
  int32_t count = 0;
  TsrError* err = call_plugin([&] { return e.desc.device_count(e.desc.context, &count); });
  if (err != nullptr) {
    e.unavailable_reason = (err->struct_size >= offsetof(TsrError, message) + sizeof(err->message) && err->message)
                               ? err->message
                               : "unavailable";
    err->destroy(err);
    count = 0;
  }
  std::string problem;
  if (count < 0) {
    problem = "device_count returned " + std::to_string(count) + ", a negative count";
  } else if (count > kMaxDevicesPerType) {
    problem = "device_count returned " + std::to_string(count) + ", more than the " + std::to_string(kMaxDevicesPerType) +
              " devices a device type can have";
  }
  if (!problem.empty()) {
    e.unavailable_reason = problem;
    rec.warnings.push_back("device type '" + e.name + "': " + problem + "; it is listed with 0 devices");
    count = 0;
  }
  e.device_count = count;
}

// Refuses a path the C library would read only up to an embedded NUL (a
// std::string or Python str may hold one): it names another file than asked.
void check_path_text(const std::string& path) {
  const size_t nul = path.find('\0');
  if (nul == std::string::npos) return;
  std::string shown;
  for (char c : path) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
  throw PluginError(detail::str("cannot load plugin '", shown, "': the path contains a NUL byte (at position ", nul,
                                ")"));
}

PluginInfo load_plugin_locked(const std::string& path_text) {
  check_path_text(path_text);
  const fs::path path(path_text);
  std::error_code ec;
  TSR_CHECK(fs::exists(path, ec), PluginError, "cannot load plugin '", path_text, "': file not found");
  const std::string canonical = fs::canonical(path, ec).string();
  TSR_CHECK(!ec, PluginError, "cannot load plugin '", path_text, "': ", ec.message());
  for (PluginRecord* p : host().plugins) {
    TSR_CHECK(p->path != canonical, PluginError, "plugin '", p->name, "' is already loaded from '", canonical, "'");
  }

  // Before dlopen, which trusts the file: a truncated library kills the process
  // inside it (SIGBUS), so the ELF headers are checked first.
  detail::PluginFileIdentity checked;
  const std::string why = detail::check_plugin_file(canonical, &checked);
  TSR_CHECK(why.empty(), PluginError, "cannot load plugin '", path_text, "': ", why);
  // The file can change between the check and dlopen (TOCTOU). dlopen of
  // /proc/self/fd/N would load exactly the inode checked, but the loader would
  // then record that name for the library, and debuggers, symbolizers and
  // dladdr could no longer find the file. Instead the identity (device, inode,
  // size, mtime) is compared again right before dlopen, which leaves a window
  // of microseconds, and only for a file rewritten in place.
  detail::PluginFileIdentity now;
  TSR_CHECK(detail::plugin_file_identity(canonical, &now) && now == checked, PluginError, "cannot load plugin '",
            path_text, "': the file changed while it was being loaded (it was replaced or rewritten); try again");

  auto lib = std::make_shared<boost::dll::shared_library>();
  try {
    // The canonical path: a bare file name would make dlopen search the
    // library path instead of loading the file just checked.
    lib->load(fs::path(canonical), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError(detail::str("cannot load plugin '", path_text, "': not a loadable shared library (", e.what(), ")"));
  }
  TSR_CHECK(lib->has(TSR_PLUGIN_ENTRY_SYMBOL), PluginError, "cannot load plugin '", path_text,
            "': it is a shared library but not a Tessera plugin (no exported symbol '", TSR_PLUGIN_ENTRY_SYMBOL, "')");
  auto entry = lib->get<const TsrPluginInfo*(const TsrHostOffer*)>(TSR_PLUGIN_ENTRY_SYMBOL);

  const TsrHostOffer offer = {sizeof(TsrHostOffer), {TSR_ABI_VERSION_MAJOR, 0}, {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR}};
  const TsrPluginInfo* info = nullptr;
  try {
    info = entry(&offer);
  } catch (...) {
    throw PluginError(detail::str("cannot load plugin '", path_text, "': its entry point threw a C++ exception"));
  }
  TSR_CHECK(info != nullptr, PluginError, "cannot load plugin '", path_text, "': it declined to load (its entry point returned NULL for host ABI ",
            TSR_ABI_VERSION_MAJOR, ".0-", TSR_ABI_VERSION_MAJOR, ".", TSR_ABI_VERSION_MINOR, ")");
  TSR_CHECK(info->struct_size >= offsetof(TsrPluginInfo, abi_version) + sizeof(TsrVersion), PluginError,
            "cannot load plugin '", path_text, "': malformed plugin description (struct_size ", info->struct_size, ")");
  // Only fields the plugin's struct_size covers are read (H5).
  const auto present = [&](size_t offset) { return info->struct_size >= offset + sizeof(void*); };
  const char* const name_ptr = present(offsetof(TsrPluginInfo, name)) ? info->name : nullptr;
  const std::string name = valid_name(name_ptr) ? name_ptr : "?";
  // Rule 2: on a major mismatch nothing else of the plugin is called.
  TSR_CHECK(info->abi_version.major == TSR_ABI_VERSION_MAJOR, PluginError, "cannot load plugin '", name, "' from '",
            path_text, "': it implements Tessera ABI ", info->abi_version.major, ".", info->abi_version.minor,
            " but this core implements ABI ", TSR_ABI_VERSION_MAJOR, ".", TSR_ABI_VERSION_MINOR,
            " (the major versions must match)");
  TSR_CHECK(present(offsetof(TsrPluginInfo, initialize)) && info->initialize != nullptr,
            PluginError, "cannot load plugin '", name, "' from '", path_text, "': it has no initialize function");
  TSR_CHECK(valid_name(name_ptr), PluginError, "cannot load plugin from '", path_text,
            "': its plugin name is missing or does not match [a-z][a-z0-9_]* (at most 64 characters)");
  for (PluginRecord* p : host().plugins) {
    TSR_CHECK(p->name != name, PluginError, "cannot load plugin '", name, "' from '", path_text,
              "': a plugin of that name is already loaded from '", p->path, "'");
  }

  auto loaded = std::make_unique<PluginRecord>();  // registers its host context
  PluginRecord& rec = *loaded;
  rec.name = name;
  rec.version = present(offsetof(TsrPluginInfo, version)) && info->version ? info->version : "";
  rec.description = present(offsetof(TsrPluginInfo, description)) && info->description ? info->description : "";
  rec.path = canonical;
  rec.abi_version = info->abi_version;
  rec.info = info;
  rec.library = lib;
  rec.staging.plugin = &rec;
  rec.staging.thread = std::this_thread::get_id();
  rec.host_api = TsrHostApi{sizeof(TsrHostApi), {TSR_ABI_VERSION_MAJOR, TSR_ABI_VERSION_MINOR},
                            reinterpret_cast<TsrHostContext>(&rec.staging), &host_register_device_type,
                            &host_register_kernel, &host_log, &host_register_op};

  TsrError* err = call_plugin([&] { return info->initialize(&rec.host_api, &rec.state); });
  rec.staging.open.store(false, std::memory_order_release);
  if (err != nullptr) {
    throw PluginError(detail::str("plugin '", name, "' (", path_text,
                                  ") failed to initialize; nothing of it was registered: ", take_error_message(err)));
  }

  // The host's own reference, before anything is published: another thread may
  // use the plugin's devices as soon as they are, and release its references
  // before this function returns.
  intrusive_ptr_add_ref(&rec);
  // Commit: device types first (kernels refer to their ids), then kernels, and
  // only then are the device types published, so no thread ever sees a device
  // type without its kernels.
  Staging& st = rec.staging;
  std::vector<const DeviceTypeEntry*> added;
  // If the commit fails after a successful initialize (e.g. the device type
  // table is full), undo it and let the host's reference run shutdown before the
  // library closes, so the plugin's state and threads do not outlive its code.
  struct UndoCommit {
    std::unique_ptr<PluginRecord>& loaded;
    std::vector<const DeviceTypeEntry*>& added;
    ~UndoCommit() {
      if (!loaded) return;  // committed
      remove_plugin_kernels(loaded.get());
      defined_ops::retire(loaded.get());
      for (const DeviceTypeEntry* e : added) device_registry::retire(e->id);
      intrusive_ptr_release(loaded.release());
    }
  } undo{loaded, added};
  for (DeviceTypeEntry& e : st.device_types) {
    query_device_count(e, rec);
    e.small_block_cache = e.has(TSR_DEVICE_CAP_CACHING_ALLOCATOR) && !e.has(TSR_DEVICE_CAP_ASYNC) && !e.no_storage();
    e.core_allocator = memory::uses_caching_allocator(e);
    const DeviceTypeEntry* entry = device_registry::add(std::move(e));
    rec.device_types.push_back(entry->name);
    added.push_back(entry);
  }
  // Ops before kernels: their kernels install on the declared Operator.
  for (auto& d : st.ops) defined_ops::commit(std::move(d), &rec);
  st.ops.clear();
  for (const PendingKernel& k : st.kernels) {
    const DeviceTypeEntry* dev = nullptr;  // this plugin's own (not yet published) type, or a live one
    for (const DeviceTypeEntry* e : added)
      if (e->name == k.device_type) dev = e;
    if (dev == nullptr) dev = device_registry::find(k.device_type);
    Operator& op = Dispatcher::instance().get(k.op);
    install_plugin_kernel(op, dev->id, k.dtype_mask, k.fn, k.context, &rec);
    KernelInfo ki{k.op, k.device_type, {}};
    dtype_mask_names(k.dtype_mask, &ki.dtypes);
    rec.kernels.push_back(std::move(ki));
    // Kept (harmless), but the author should know: the core converts such
    // inputs before it dispatches, so these kernels never run.
    if (k.unreachable_mask != 0)
      rec.warnings.push_back("kernel for '" + k.op + "' on '" + k.device_type + "' for " +
                             dtype_mask_names(k.unreachable_mask) + " is never called: the core runs '" + k.op +
                             "' only in " + dtype_mask_names(dispatch_dtype_mask(op)) +
                             " and converts other inputs first");
  }
  st.device_types.clear();
  st.kernels.clear();
  for (const DeviceTypeEntry* e : added) device_registry::publish(e->id);
  for (const std::string& w : rec.warnings) host_message(TSR_LOG_WARNING, "plugin " + name + " warning: " + w);
  PluginRecord* kept = loaded.release();
  host().plugins.push_back(kept);
  return kept->describe();
}

}  // namespace

PluginRecord::PluginRecord() {
  std::lock_guard<std::mutex> lock(host().contexts_mutex);
  host().contexts.push_back(&staging);
}

PluginRecord::~PluginRecord() {
  std::lock_guard<std::mutex> lock(host().contexts_mutex);
  auto& list = host().contexts;
  list.erase(std::remove(list.begin(), list.end(), &staging), list.end());
}

std::vector<std::string> plugin_search_path() {
  if (const char* env = std::getenv("TESSERA_PLUGIN_PATH"); env != nullptr) return env::parse_path_list(env);
  const fs::path lib_dir = boost::dll::this_line_location().parent_path();
  return {(lib_dir / "tessera" / "plugins").string()};
}

PluginInfo load_plugin(const std::string& path) {
  check_path_text(path);
  // Defaults first, so that a plugin adding kernels to "cpu" finds it, and an
  // explicit load of a default plugin finds it loaded.
  load_default_plugins();
  std::lock_guard<std::recursive_mutex> lock(host().mutex);
  std::error_code ec;
  const std::string canonical = fs::canonical(path, ec).string();
  if (!ec) {
    for (PluginRecord* p : host().plugins)
      if (p->path == canonical) return p->describe();  // the same file again: nothing to do (plugin.h)
  }
  return load_plugin_locked(path);
}

void unload_plugin(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(host().mutex);
  auto& list = host().plugins;
  auto it = std::find_if(list.begin(), list.end(), [&](PluginRecord* p) { return p->name == name; });
  TSR_CHECK(it != list.end(), ValueError, "unload_plugin: no plugin named '", name, "' is loaded");
  PluginRecord* rec = *it;
  list.erase(it);
  for (const std::string& type : rec->device_types) {
    if (const DeviceTypeEntry* e = device_registry::find(type)) {
      device_registry::retire(e->id);
      memory::device_allocators::retire(e->id);  // cached memory and events back before shutdown
      memory::pinned_allocators::retire(e->id);
    }
  }
  defined_ops::retire(rec);  // its ops' calls now fail naming it; none of its shape functions runs
  remove_plugin_kernels(rec);
  intrusive_ptr_release(rec);  // the host's reference; storages may keep it loaded
}

void load_default_plugins() {
  std::call_once(host().defaults_once, [] {
    std::lock_guard<std::recursive_mutex> lock(host().mutex);
    const auto record = [](std::string error) {
      host_message(TSR_LOG_INFO, "default plugin not loaded: " + error);
      host().load_errors.push_back(std::move(error));
    };
    // The candidates in search-path order, each folder's *.so files by name.
    std::vector<std::string> files;
    for (const std::string& entry : plugin_search_path()) {
      std::error_code ec;
      if (fs::is_directory(entry, ec)) {
        std::vector<std::string> in_folder;
        for (const auto& f : fs::directory_iterator(entry, ec))
          if (f.is_regular_file() && f.path().extension() == ".so") in_folder.push_back(f.path().string());
        std::sort(in_folder.begin(), in_folder.end());
        files.insert(files.end(), in_folder.begin(), in_folder.end());
      } else if (fs::exists(entry, ec)) {
        files.push_back(entry);
      } else {
        record(entry + ": not found");
      }
    }
    // The built-in plugins' files first, wherever they are in the path: a
    // plugin adding kernels to "cpu" then finds it, and a stranger calling
    // itself "cpu" is refused as a duplicate rather than displacing it.
    std::stable_partition(files.begin(), files.end(), [](const std::string& f) { return is_builtin_file(f); });
    std::set<std::string> seen;  // canonical paths: a file listed twice loads once
    for (const std::string& f : files) {
      std::error_code ec;
      const std::string canonical = fs::canonical(f, ec).string();
      if (!ec) {
        const bool loaded = std::any_of(host().plugins.begin(), host().plugins.end(),
                                        [&](const PluginRecord* p) { return p->path == canonical; });
        if (!seen.insert(canonical).second || loaded) {
          host_message(TSR_LOG_INFO, f + ": listed more than once in the plugin search path; loaded once");
          continue;
        }
      }
      try {
        load_plugin_locked(f);
      } catch (const PluginError& e) {
        record(e.what());  // names the file (and, for a duplicate name, both files)
      } catch (const std::exception& e) {
        record(f + ": " + e.what());
      }
    }
  });
}

std::vector<PluginInfo> plugins() {
  load_default_plugins();
  std::lock_guard<std::recursive_mutex> lock(host().mutex);
  std::vector<PluginInfo> out;
  for (PluginRecord* p : host().plugins) out.push_back(p->describe());
  return out;
}

std::vector<std::string> plugin_load_errors() {
  load_default_plugins();
  std::lock_guard<std::recursive_mutex> lock(host().mutex);
  return host().load_errors;
}

std::vector<DeviceTypeSummary> device_types() {
  load_default_plugins();
  std::vector<DeviceTypeSummary> out;
  for (const DeviceTypeEntry* e : device_registry::all()) {
    DeviceTypeSummary s;
    s.name = e->name;
    s.plugin = e->plugin_name;
    s.dlpack_device_type = e->desc.dlpack_device_type;
    s.capabilities = e->desc.capabilities;
    s.device_count = e->device_count;
    s.unavailable_reason = e->unavailable_reason;
    for (int i = 0; i < e->device_count; ++i) {
      if (e->desc.describe_device == nullptr) break;
      char buf[256] = {0};
      TsrError* err = call_plugin([&] { return e->desc.describe_device(e->desc.context, i, buf, sizeof(buf)); });
      if (err != nullptr) {
        s.device_descriptions.push_back(std::string("(describe_device failed: ") + (err->message ? err->message : "") + ")");
        err->destroy(err);
      } else {
        buf[sizeof(buf) - 1] = 0;
        s.device_descriptions.push_back(buf);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Device> devices() {
  std::vector<Device> out;
  load_default_plugins();
  for (const DeviceTypeEntry* e : device_registry::all())
    for (int i = 0; i < e->device_count; ++i) out.emplace_back(e->id, i);
  return out;
}

std::string info_text() {
  std::ostringstream os;
  os << "Tessera core, ABI " << TSR_ABI_VERSION_MAJOR << "." << TSR_ABI_VERSION_MINOR << ", op catalogue "
     << op_catalogue_version() << "\n";
  os << "Plugin search path:";
  for (const auto& p : plugin_search_path()) os << " " << p;
  os << "\n";
  const auto types = device_types();
  for (const PluginInfo& p : plugins()) {
    os << "\nplugin " << p.name << " " << p.version << " (ABI " << p.abi_major << "." << p.abi_minor << ")\n";
    os << "  path: " << p.path << "\n";
    if (!p.description.empty()) os << "  " << p.description << "\n";
    for (const auto& t : types) {
      if (t.plugin != p.name) continue;
      os << "  device type " << t.name << ": " << t.device_count << " device(s), DLPack type " << t.dlpack_device_type;
      std::vector<std::string> caps;
      if (t.capabilities & TSR_DEVICE_CAP_HOST_ACCESSIBLE) caps.push_back("host-accessible");
      if (t.capabilities & TSR_DEVICE_CAP_NO_STORAGE) caps.push_back("no-storage");
      if (t.capabilities & TSR_DEVICE_CAP_ASYNC) caps.push_back("async");
      if (t.capabilities & TSR_DEVICE_CAP_CACHING_ALLOCATOR) caps.push_back("caching-allocator");
      for (size_t i = 0; i < caps.size(); ++i) os << (i ? ", " : ", capabilities: ") << caps[i];
      os << "\n";
      if (!t.unavailable_reason.empty()) os << "    unavailable: " << t.unavailable_reason << "\n";
      for (size_t i = 0; i < t.device_descriptions.size(); ++i)
        os << "    " << t.name << ":" << i << "  " << t.device_descriptions[i] << "\n";
    }
    // Grouped by (device type, dtypes): a plugin with a hundred kernels stays
    // readable. Groups keep registration order.
    os << "  kernels (" << p.kernels.size() << "), by device type and dtypes:\n";
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    for (const KernelInfo& k : p.kernels) {
      std::string key = "[" + k.device_type + "]";
      for (size_t i = 0; i < k.dtypes.size(); ++i) key += (i ? ", " : " ") + k.dtypes[i];
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(k.op);
    }
    for (const auto& [key, ops] : groups) {
      os << "    " << key << ":\n      ";
      size_t column = 6;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (i > 0 && column + ops[i].size() + 2 > 100) {
          os << ",\n      ";
          column = 6;
        } else if (i > 0) {
          os << ", ";
          column += 2;
        }
        os << ops[i];
        column += ops[i].size();
      }
      os << "\n";
    }
    if (!p.ops.empty()) {
      os << "  ops it defines (" << p.ops.size() << "):\n";
      for (const PluginOpInfo& o : p.ops) {
        os << "    " << o.schema << "\n";
        std::string flags;
        for (const auto& [on, text] : {std::pair{o.pointwise, "pointwise"}, std::pair{o.view, "view"},
                                       std::pair{o.nondeterministic, "nondeterministic"}})
          if (on) flags += std::string(flags.empty() ? "" : ", ") + text;
        if (!o.inplace_variant.empty()) flags += (flags.empty() ? "in-place variant " : ", in-place variant ") + o.inplace_variant;
        if (!flags.empty()) os << "      " << flags << "\n";
        os << "      shape: " << o.shape_text << "\n      derivative: " << o.derivative_text << "\n";
      }
    }
    if (!p.warnings.empty()) {
      os << "  warnings:\n";
      for (const std::string& w : p.warnings) os << "    " << w << "\n";
    }
  }
  const auto errors = plugin_load_errors();
  if (!errors.empty()) {
    os << "\nplugins that failed to load:\n";
    for (const auto& e : errors) os << "  " << e << "\n";
  }
  return os.str();
}

}  // namespace tessera
