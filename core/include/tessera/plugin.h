// tessera/plugin.h — loading plugins and listing what they provide.
//
// Plugins are shared libraries speaking the C ABI of tessera/abi.h. The default
// set is loaded on first need (the first Device built from a name, or any call
// below): every plugin found in the folders of TESSERA_PLUGIN_PATH (':'-separated
// folders or files), or, when it is unset, in the `tessera/plugins` folder next to
// libtessera. A default plugin that fails to load is recorded (plugin_load_errors)
// and skipped; load_plugin() on an explicit path throws instead.
//
// Load order: the built-in plugins' files (libtessera-cpu.so, libtessera-cuda.so,
// libtessera-meta.so, libtessera-sim.so) first, wherever they are in the search path; then every
// other file in search-path order, a folder's *.so files sorted by name; a file
// reached twice loads once. Explicit load_plugin() calls come after the default
// set. A plugin registering kernels for another plugin's device type must load
// after it. The built-in plugins' device type names ("cpu", "cuda", "meta", "sim") and
// DLPack device types (kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged) are
// reserved for them: another plugin registering one is refused, whatever the
// order. docs/abi.md H1 and H18 have the rules.
//
// Threading: every function here is safe from any thread; loading is serialized.
// A plugin's library stays loaded while something it produced (a storage) lives.
#pragma once

#include <tessera/device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct KernelInfo {
  std::string op;
  std::string device_type;
  std::vector<std::string> dtypes;
};

/// An op a plugin defined through register_op (ABI 1.3; docs/abi.md §5).
struct PluginOpInfo {
  std::string name;     // "myplugin::fused_gelu"
  std::string schema;   // its schema text
  std::string plugin;   // the plugin that defined it
  /// Its in-place variant's name ("myplugin::fused_gelu_"), or "" without one.
  std::string inplace_variant;
  bool pointwise = false;
  bool view = false;
  bool nondeterministic = false;
  /// TSR_SHAPE_* of abi.h, and the tensor argument it names (-1 for none).
  int32_t shape_rule = 0;
  int32_t shape_input = -1;
  /// Whether its results can require grad (a derivative, or a view).
  bool differentiable = false;
  /// One line each: "same shape and dtype as argument 'self'", "backward op
  /// myplugin::fused_gelu_backward(grad, self)", "composite: 3 steps".
  std::string shape_text;
  std::string derivative_text;
  /// False once its plugin was unloaded: calls then fail naming the plugin,
  /// until the plugin loads again.
  bool loaded = false;
};

struct PluginInfo {
  std::string name;
  std::string version;
  std::string description;
  std::string path;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::vector<std::string> device_types;
  std::vector<KernelInfo> kernels;
  /// Problems found in the plugin's registrations that did not stop the load,
  /// one sentence each: kernels the core never calls (registered for a dtype it
  /// converts the op's inputs from first, e.g. exp for int64), a device_count it
  /// could not use. Also logged as warnings when the plugin loads, and listed by
  /// info_text().
  std::vector<std::string> warnings;
  /// The ops it defined (register_op), by name.
  std::vector<PluginOpInfo> ops;
};

struct DeviceTypeSummary {
  std::string name;
  std::string plugin;
  int32_t dlpack_device_type = 0;
  uint64_t capabilities = 0;
  int32_t device_count = 0;
  /// Why device_count is 0, when the plugin said (e.g. "no CUDA driver").
  std::string unavailable_reason;
  /// describe_device() of each device, when the plugin provides it.
  std::vector<std::string> device_descriptions;
};

/// Loads the plugin at `path` (a shared library file), after the default set.
/// Before dlopen, the file must be a regular file whose ELF headers show a
/// shared library for this host's class, byte order and machine with every
/// loadable segment inside the file (a truncated or foreign file is refused,
/// never handed to the dynamic loader). Throws PluginError naming the path on: a
/// path holding a NUL byte, a missing file, not a regular file, not such a
/// library (with the reason, e.g. "truncated: PT_LOAD segment 2 of 4 ends at
/// byte 13648, the file is 1000 bytes"), no entry symbol, ABI major mismatch
/// (naming both versions), a plugin name already loaded from another file
/// (naming both files), or an initialize that failed (with the plugin's
/// message, e.g. a reserved device type name). Nothing of a refused plugin stays
/// registered. Loading a file that is already loaded (the same file by its
/// canonical path) does nothing and returns the loaded plugin's description;
/// after unload_plugin() the file loads anew. Returns the plugin's description.
PluginInfo load_plugin(const std::string& path);
/// Unloads the plugin `name` (ValueError if none is loaded): its kernels are
/// withdrawn, its device types vanish from lookups and refuse new allocations
/// (tensors already on them can still be copied off and freed), and the plugin's
/// shutdown runs and its library closes when the last storage it produced goes —
/// at once if there is none. Must not race with calls into its kernels on device
/// types of other plugins. A later load_plugin of the same file works again.
void unload_plugin(const std::string& name);
/// Loads the default plugin set once (idempotent); see the file comment.
void load_default_plugins();
/// The folders/files searched for default plugins, in order.
std::vector<std::string> plugin_search_path();
std::vector<PluginInfo> plugins();
std::vector<DeviceTypeSummary> device_types();
/// Errors of default plugins that failed to load, each naming the file (and
/// for a plugin name found twice on the search path, both files). Also logged
/// with TESSERA_VERBOSE=1.
std::vector<std::string> plugin_load_errors();
/// Every available device (index 0..count-1 of every registered type).
std::vector<Device> devices();
/// What `tessera info` prints: plugins, devices, kernels.
std::string info_text();
/// Every op defined by a plugin since the process started, loaded or not, by name.
std::vector<PluginOpInfo> plugin_ops();

/// The ABI version this core implements.
uint32_t abi_version_major();
uint32_t abi_version_minor();

}  // namespace tessera
