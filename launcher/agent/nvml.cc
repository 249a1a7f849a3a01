#include "launcher/agent/nvml.h"

#include <dlfcn.h>

#include <memory>

namespace baton {
// Named, not anonymous: NvmlSampler::Impl holds these (a unity build would otherwise see a
// member of an externally visible class whose type has internal linkage).
namespace nvml_abi {

// The subset of nvml.h baton uses, with NVML's own names and layouts.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct NvmlApi {
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*GetCount)(unsigned*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*GetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*);
  // Optional: older drivers lack these.
  nvmlReturn_t (*GetNumaNodeId)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*GetMaxMigDeviceCount)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*GetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned, nvmlDevice_t*);
  nvmlReturn_t (*GetMinorNumber)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*GetHandleByUUID)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*GetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*);
};

struct DlCloser {
  void operator()(void* h) const { dlclose(h); }
};

}  // namespace nvml_abi

namespace {

using namespace nvml_abi;  // NOLINT(build/namespaces): this file's own ABI declarations

template <typename F>
bool Bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

absl::StatusOr<NvmlApi> BindApi(void* lib) {
  NvmlApi a{};
  bool ok = Bind(lib, "nvmlInit_v2", &a.Init) && Bind(lib, "nvmlShutdown", &a.Shutdown) &&
            Bind(lib, "nvmlErrorString", &a.ErrorString) &&
            Bind(lib, "nvmlDeviceGetCount_v2", &a.GetCount) &&
            Bind(lib, "nvmlDeviceGetHandleByIndex_v2", &a.GetHandleByIndex) &&
            Bind(lib, "nvmlDeviceGetUUID", &a.GetUUID) &&
            Bind(lib, "nvmlDeviceGetName", &a.GetName) &&
            Bind(lib, "nvmlDeviceGetMemoryInfo", &a.GetMemoryInfo) &&
            Bind(lib, "nvmlDeviceGetPciInfo_v3", &a.GetPciInfo);
  if (!ok) return absl::FailedPreconditionError(std::string("NVML lacks a symbol: ") + dlerror());
  Bind(lib, "nvmlDeviceGetNumaNodeId", &a.GetNumaNodeId);
  Bind(lib, "nvmlDeviceGetMigMode", &a.GetMigMode);
  Bind(lib, "nvmlDeviceGetMaxMigDeviceCount", &a.GetMaxMigDeviceCount);
  Bind(lib, "nvmlDeviceGetMigDeviceHandleByIndex", &a.GetMigDeviceHandleByIndex);
  Bind(lib, "nvmlDeviceGetMinorNumber", &a.GetMinorNumber);
  Bind(lib, "nvmlDeviceGetHandleByUUID", &a.GetHandleByUUID);
  Bind(lib, "nvmlDeviceGetUtilizationRates", &a.GetUtilizationRates);
  return a;
}

class Discovery {
 public:
  explicit Discovery(const NvmlApi& api) : api_(api) {}

  absl::Status Check(nvmlReturn_t r, const std::string& what) const {
    if (r == NVML_SUCCESS) return absl::OkStatus();
    return absl::UnavailableError("NVML " + what + ": " + api_.ErrorString(r) + " (" +
                                  std::to_string(r) + ")");
  }

  // UUID, name, memory of one handle (a GPU or a MIG slice).
  absl::Status Describe(nvmlDevice_t dev, GpuInfo* g) const {
    char buf[96] = {};
    if (auto s = Check(api_.GetUUID(dev, buf, sizeof buf), "GetUUID"); !s.ok()) return s;
    g->uuid = buf;
    char name[96] = {};
    if (auto s = Check(api_.GetName(dev, name, sizeof name), "GetName"); !s.ok()) return s;
    g->model = name;
    nvmlMemory_t mem{};
    if (auto s = Check(api_.GetMemoryInfo(dev, &mem), "GetMemoryInfo"); !s.ok()) return s;
    g->memory_bytes = mem.total;
    return absl::OkStatus();
  }

  // -1 when the driver does not say: the inventory then asks hwloc about the PCI device.
  int32_t NumaNode(nvmlDevice_t dev) const {
    unsigned node = 0;
    if (api_.GetNumaNodeId && api_.GetNumaNodeId(dev, &node) == NVML_SUCCESS) {
      return static_cast<int32_t>(node);
    }
    return -1;
  }

  bool MigEnabled(nvmlDevice_t dev) const {
    unsigned current = 0, pending = 0;
    return api_.GetMigMode && api_.GetMaxMigDeviceCount && api_.GetMigDeviceHandleByIndex &&
           api_.GetMigMode(dev, &current, &pending) == NVML_SUCCESS &&
           current == NVML_DEVICE_MIG_ENABLE;
  }

  absl::Status AddDevice(unsigned index, std::vector<GpuInfo>* out) const {
    nvmlDevice_t dev = nullptr;
    std::string at = "device " + std::to_string(index);
    if (auto s = Check(api_.GetHandleByIndex(index, &dev), "GetHandleByIndex " + at); !s.ok()) {
      return s;
    }
    GpuInfo g;
    g.index = index;
    if (auto s = Describe(dev, &g); !s.ok()) return s;
    nvmlPciInfo_t pci{};
    if (auto s = Check(api_.GetPciInfo(dev, &pci), "GetPciInfo " + at); !s.ok()) return s;
    g.pci_bus_id = pci.busId;
    g.numa_node = NumaNode(dev);
    unsigned minor = 0;
    if (api_.GetMinorNumber && api_.GetMinorNumber(dev, &minor) == NVML_SUCCESS) {
      g.minor = static_cast<int32_t>(minor);
    }
    if (!MigEnabled(dev)) {
      out->push_back(std::move(g));
      return absl::OkStatus();
    }
    unsigned slots = 0;
    if (auto s = Check(api_.GetMaxMigDeviceCount(dev, &slots), "GetMaxMigDeviceCount " + at);
        !s.ok()) {
      return s;
    }
    for (unsigned i = 0; i < slots; ++i) {
      nvmlDevice_t mig = nullptr;
      if (api_.GetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS) continue;  // empty slot
      GpuInfo s = g;
      if (auto st = Describe(mig, &s); !st.ok()) return st;
      s.mig_profile = MigProfileFromName(s.model);
      s.model = g.model;
      s.parent_uuid = g.uuid;
      out->push_back(std::move(s));
    }
    return absl::OkStatus();
  }

 private:
  const NvmlApi& api_;
};

}  // namespace

std::string MigProfileFromName(const std::string& name) {
  size_t pos = name.rfind(" MIG ");
  return pos == std::string::npos ? "" : name.substr(pos + 5);
}

struct NvmlSampler::Impl {
  std::unique_ptr<void, nvml_abi::DlCloser> lib;
  nvml_abi::NvmlApi api{};
};

NvmlSampler::NvmlSampler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NvmlSampler::~NvmlSampler() { impl_->api.Shutdown(); }

absl::StatusOr<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(const NvmlOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->lib.reset(dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!impl->lib) return absl::NotFoundError("cannot load " + o.library + ": " + dlerror());
  auto api = BindApi(impl->lib.get());
  if (!api.ok()) return api.status();
  if (api->GetHandleByUUID == nullptr) {
    return absl::FailedPreconditionError("NVML lacks nvmlDeviceGetHandleByUUID");
  }
  impl->api = *api;
  if (auto s = Discovery(impl->api).Check(impl->api.Init(), "Init"); !s.ok()) return s;
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(impl)));
}

absl::StatusOr<GpuSample> NvmlSampler::Sample(const std::string& uuid) {
  const NvmlApi& api = impl_->api;
  Discovery d(api);
  nvmlDevice_t dev = nullptr;
  if (auto s = d.Check(api.GetHandleByUUID(uuid.c_str(), &dev), "GetHandleByUUID " + uuid);
      !s.ok()) {
    return s;
  }
  GpuSample out;
  nvmlMemory_t mem{};
  if (api.GetMemoryInfo(dev, &mem) == NVML_SUCCESS) out.memory_used_bytes = mem.used;
  nvmlUtilization_t util{};
  if (api.GetUtilizationRates && api.GetUtilizationRates(dev, &util) == NVML_SUCCESS) {
    out.has_percent = true;
    out.percent = util.gpu;
  }
  return out;
}

absl::StatusOr<std::vector<GpuInfo>> DiscoverNvmlGpus(const NvmlOptions& o) {
  std::unique_ptr<void, DlCloser> lib(dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib) return absl::NotFoundError("cannot load " + o.library + ": " + dlerror());
  auto api = BindApi(lib.get());
  if (!api.ok()) return api.status();
  Discovery d(*api);
  if (auto s = d.Check(api->Init(), "Init"); !s.ok()) return s;
  std::vector<GpuInfo> gpus;
  unsigned count = 0;
  absl::Status status = d.Check(api->GetCount(&count), "GetCount");
  for (unsigned i = 0; status.ok() && i < count; ++i) status = d.AddDevice(i, &gpus);
  api->Shutdown();
  if (!status.ok()) return status;
  return gpus;
}

}  // namespace baton
