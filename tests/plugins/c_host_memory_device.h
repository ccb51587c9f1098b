/* Shared by the plain C99 test plugins (abi.h only): an error object and the
 * memory functions of a device whose memory is host memory (malloc/free/memcpy,
 * one device), and a device type description using them. Each plugin includes it once; everything is static. Define
 * TSRTEST_PREFIX ("name: ") before including it: it starts the message of the
 * error made when malloc fails. */
#ifndef TSRTEST_C_HOST_MEMORY_DEVICE_H
#define TSRTEST_C_HOST_MEMORY_DEVICE_H

#include <stdlib.h>
#include <string.h>
#include <tessera/abi.h>

#ifndef TSRTEST_PREFIX
#error "define TSRTEST_PREFIX before including c_host_memory_device.h"
/* Fills `d` with such a device type named `name` (8-byte alignment, DLPack
 * type 0, host-accessible, the functions above); the caller may override
 * fields before registering it. */
static void tsrtest_host_memory_device(TsrDeviceTypeDesc* d, const char* name) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->name = name;
  d->capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d->memory_alignment = 8;
  d->device_count = tsrtest_device_count;
  d->allocate = tsrtest_allocate;
  d->deallocate = tsrtest_deallocate;
  d->copy = tsrtest_copy;
}

#endif

static void tsrtest_destroy(TsrError* self) { free(self); }
static void tsrtest_destroy_static(TsrError* self) { (void)self; }

/* A heap error carrying a copy of `message`; a static one when malloc fails. */
static TsrError* tsrtest_error(TsrErrorCode code, const char* message) {
  static TsrError oom = {sizeof(TsrError), TSR_ERROR_OUT_OF_MEMORY, TSRTEST_PREFIX "out of memory",
                         tsrtest_destroy_static};
  size_t len = strlen(message);
  TsrError* e = (TsrError*)malloc(sizeof(TsrError) + len + 1);
  if (e == NULL) return &oom;
  memcpy((char*)(e + 1), message, len + 1);
  e->struct_size = sizeof(TsrError);
  e->code = code;
  e->message = (const char*)(e + 1);
  e->destroy = tsrtest_destroy;
  return e;
}

static TsrError* tsrtest_device_count(void* context, int32_t* count) {
  (void)context;
  *count = 1;
  return NULL;
}
static TsrError* tsrtest_allocate(void* context, int32_t index, size_t nbytes, TsrStream stream, void** ptr) {
  (void)context;
  (void)index;
  (void)stream;
  *ptr = malloc(nbytes);
  return *ptr != NULL ? NULL : tsrtest_error(TSR_ERROR_OUT_OF_MEMORY, TSRTEST_PREFIX "malloc failed");
}
static void tsrtest_deallocate(void* context, int32_t index, void* ptr, size_t nbytes, TsrStream stream) {
  (void)context;
  (void)index;
  (void)nbytes;
  (void)stream;
  free(ptr);
}
static TsrError* tsrtest_copy(void* context, const TsrCopyRequest* r) {
  (void)context;
  memcpy(r->dst, r->src, r->nbytes);
  return NULL;
}

/* Fills `d` with such a device type named `name` (8-byte alignment, DLPack
 * type 0, host-accessible, the functions above); the caller may override
 * fields before registering it. */
static void tsrtest_host_memory_device(TsrDeviceTypeDesc* d, const char* name) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->name = name;
  d->capabilities = TSR_DEVICE_CAP_HOST_ACCESSIBLE;
  d->memory_alignment = 8;
  d->device_count = tsrtest_device_count;
  d->allocate = tsrtest_allocate;
  d->deallocate = tsrtest_deallocate;
  d->copy = tsrtest_copy;
}

#endif
