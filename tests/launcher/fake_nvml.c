// A stand-in libnvidia-ml.so.1 for the inventory tests: two H200s on NUMA nodes 0 and 1,
// the second in MIG mode with a 1g.18gb and a 3g.71gb slice (slot 1 empty). Setting
// FAKE_NVML_INIT_ERROR=<code> makes nvmlInit_v2 fail with that code; FAKE_NVML_NO_NUMA=1
// makes nvmlDeviceGetNumaNodeId unsupported, as older drivers have it. Utilisation: the
// first GPU is 37% busy with 5 GiB in use; MIG slices have no utilisation (unsupported),
// as on real drivers.
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6 };

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlDevice_st {
  const char* uuid;
  const char* name;
  unsigned long long memory;
  const char* bus_id;
  unsigned numa;
  int mig;                         /* MIG mode on */
  struct nvmlDevice_st* slices[3]; /* MIG slots; NULL: empty */
} Device;

static Device slice_a = {
    "MIG-fake-1-slice-a", "NVIDIA H200 MIG 1g.18gb", 18ull << 30, "", 1, 0, {0, 0, 0}};
static Device slice_b = {
    "MIG-fake-1-slice-b", "NVIDIA H200 MIG 3g.71gb", 71ull << 30, "", 1, 0, {0, 0, 0}};
static Device gpus[2] = {
    {"GPU-fake-0000", "NVIDIA H200", 141ull << 30, "00000000:1B:00.0", 0, 0, {0, 0, 0}},
    {"GPU-fake-0001",
     "NVIDIA H200",
     141ull << 30,
     "00000000:9A:00.0",
     1,
     1,
     {&slice_a, 0, &slice_b}},
};
static int initialized = 0;

nvmlReturn_t nvmlInit_v2(void) {
  const char* err = getenv("FAKE_NVML_INIT_ERROR");
  if (err && *err) return atoi(err);
  initialized = 1;
  return kSuccess;
}
nvmlReturn_t nvmlShutdown(void) {
  initialized = 0;
  return kSuccess;
}
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kNotFound:
      return "Not Found";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialized) return kUninitialized;
  *count = 2;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, Device** dev) {
  if (!initialized) return kUninitialized;
  if (i >= 2) return kInvalidArgument;
  *dev = &gpus[i];
  return kSuccess;
}
static nvmlReturn_t CopyString(const char* s, char* buf, unsigned len) {
  if (strlen(s) + 1 > len) return kInvalidArgument;
  strcpy(buf, s);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(Device* d, char* buf, unsigned len) {
  return CopyString(d->uuid, buf, len);
}
nvmlReturn_t nvmlDeviceGetName(Device* d, char* buf, unsigned len) {
  return CopyString(d->name, buf, len);
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(Device* d, nvmlMemory_t* m) {
  m->total = d->memory;
  m->used = d == &gpus[0] && initialized ? 5ull << 30 : 0;
  m->free = d->memory - m->used;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, Device** dev) {
  if (!initialized) return kUninitialized;
  Device* all[] = {&gpus[0], &gpus[1], &slice_a, &slice_b};
  for (unsigned i = 0; i < 4; ++i) {
    if (strcmp(all[i]->uuid, uuid) == 0) {
      *dev = all[i];
      return kSuccess;
    }
  }
  return kNotFound;
}
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
nvmlReturn_t nvmlDeviceGetUtilizationRates(Device* d, nvmlUtilization_t* u) {
  if (!initialized) return kUninitialized;
  if (d == &slice_a || d == &slice_b) return kNotSupported;
  u->gpu = d == &gpus[0] ? 37 : 0;
  u->memory = 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(Device* d, nvmlPciInfo_t* p) {
  memset(p, 0, sizeof *p);
  strcpy(p->busId, d->bus_id);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetNumaNodeId(Device* d, unsigned* node) {
  const char* off = getenv("FAKE_NVML_NO_NUMA");
  if (off && *off == '1') return kNotSupported;
  *node = d->numa;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigMode(Device* d, unsigned* current, unsigned* pending) {
  *current = *pending = (unsigned)d->mig;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(Device* d, unsigned* count) {
  *count = d->mig ? 3 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(Device* d, unsigned i, Device** mig) {
  if (!d->mig || i >= 3) return kInvalidArgument;
  if (!d->slices[i]) return kNotFound;
  *mig = d->slices[i];
  return kSuccess;
}
