#include "launcher/agent/gpu_usage.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "launcher/agent/nvml.h"

namespace baton {
namespace {

class NvmlSource : public GpuUsageSource {
 public:
  NvmlSource(std::unique_ptr<NvmlSampler> nvml, const v1::Inventory& inventory)
      : nvml_(std::move(nvml)) {
    for (const v1::Gpu& g : inventory.gpus()) uuids_.push_back(g.uuid());
  }
  std::vector<v1::GpuUtilization> Sample() override {
    std::vector<v1::GpuUtilization> out;
    for (const std::string& uuid : uuids_) {
      v1::GpuUtilization& u = out.emplace_back();
      u.set_uuid(uuid);
      absl::StatusOr<GpuSample> s = nvml_->Sample(uuid);
      if (!s.ok()) continue;  // unknown this time
      u.set_memory_used_bytes(s->memory_used_bytes);
      if (s->has_percent) u.set_percent(s->percent);
    }
    return out;
  }

 private:
  std::unique_ptr<NvmlSampler> nvml_;
  std::vector<std::string> uuids_;
};

class FileSource : public GpuUsageSource {
 public:
  FileSource(std::string path, const v1::Inventory& inventory) : path_(std::move(path)) {
    for (const v1::Gpu& g : inventory.gpus()) uuids_.push_back(g.uuid());
  }
  std::vector<v1::GpuUtilization> Sample() override {
    std::map<std::string, uint32_t> values;  // by UUID; "*" for every GPU
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string uuid, percent;
      uint32_t p = 0;
      if (words >> uuid >> percent && absl::SimpleAtoi(percent, &p) && p <= 100) values[uuid] = p;
    }
    std::vector<v1::GpuUtilization> out;
    for (const std::string& uuid : uuids_) {
      v1::GpuUtilization& u = out.emplace_back();
      u.set_uuid(uuid);
      auto it = values.find(uuid);
      if (it == values.end()) it = values.find("*");
      if (it != values.end()) u.set_percent(it->second);
    }
    return out;
  }

 private:
  const std::string path_;
  std::vector<std::string> uuids_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuUsageSource>> NvmlUsage(const std::string& library,
                                                          const v1::Inventory& inventory) {
  auto nvml = NvmlSampler::Open({.library = library});
  if (!nvml.ok()) return nvml.status();
  return std::make_unique<NvmlSource>(std::move(*nvml), inventory);
}

std::unique_ptr<GpuUsageSource> FileUsage(const std::string& path, const v1::Inventory& inventory) {
  return std::make_unique<FileSource>(path, inventory);
}

std::unique_ptr<GpuUsageSource> GpuUsageFor(const v1::Inventory& inventory,
                                            const std::string& nvml_library,
                                            const std::string& fake_file) {
  if (inventory.gpus().empty()) return nullptr;
  if (inventory.gpus(0).fake()) {
    return fake_file.empty() ? nullptr : FileUsage(fake_file, inventory);
  }
  if (nvml_library.empty()) return nullptr;
  auto nvml = NvmlUsage(nvml_library, inventory);
  return nvml.ok() ? std::move(*nvml) : nullptr;
}

}  // namespace baton
