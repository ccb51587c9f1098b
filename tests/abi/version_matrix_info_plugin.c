/* A TsrPluginInfo the host must refuse, for the version matrix (docs/abi.md
 * H3, H5). Built once per variant with VM_MAJOR, VM_MINOR, VM_INFO_SIZE (the
 * struct_size it claims; 0: sizeof) and VM_NAME. initialize and shutdown
 * abort the process: the host may call neither, whatever struct_size says. */
#include <stdio.h>
#include <stdlib.h>
#include <tessera/abi.h>

#if !defined(VM_MAJOR) || !defined(VM_MINOR) || !defined(VM_INFO_SIZE) || !defined(VM_NAME)
#error "define VM_MAJOR, VM_MINOR, VM_INFO_SIZE and VM_NAME"
#endif

static TsrError* vm_info_initialize(const TsrHostApi* host, void** state) {
  (void)host;
  (void)state;
  fprintf(stderr, "%s: the host called initialize of a plugin it had to refuse\n", VM_NAME);
  abort();
}
static void vm_info_shutdown(void* state) {
  (void)state;
  fprintf(stderr, "%s: the host called shutdown of a plugin it had to refuse\n", VM_NAME);
  abort();
}

static const TsrPluginInfo vm_info = {VM_INFO_SIZE ? VM_INFO_SIZE : sizeof(TsrPluginInfo), {VM_MAJOR, VM_MINOR},
                                      VM_NAME, "0.1", "refused on purpose", vm_info_initialize, vm_info_shutdown};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer);
TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &vm_info;
}
