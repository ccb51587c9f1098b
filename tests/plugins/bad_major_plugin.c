/* A plugin claiming ABI 2.0. The host must refuse it naming both versions and
 * call nothing but the entry point: initialize aborts the process if called. */
#include <stdlib.h>
#include <tessera/abi.h>

static TsrError* must_not_be_called(const TsrHostApi* host, void** state) {
  (void)host;
  (void)state;
  abort();
}

static const TsrPluginInfo info = {sizeof(TsrPluginInfo), {2, 0}, "bad_major", "9.9", "claims ABI 2.0",
                                   must_not_be_called, NULL};

TSR_PLUGIN_EXPORT const TsrPluginInfo* tessera_plugin_entry(const TsrHostOffer* offer) {
  (void)offer;
  return &info;
}
