// Which device nodes an attempt may open. Its GPUs are fenced by device number, not by
// CUDA_VISIBLE_DEVICES (a job can unset that): every GPU of the node but the attempt's
// own is refused to it, so opening another GPU's /dev/nvidiaN fails with EPERM whatever
// the job does. nvidiactl, nvidia-uvm and every other device stay open to it.
// cgroup v1 does this with the devices controller (cgroup_v1.cc); cgroup v2 has no such
// files, so a BPF_PROG_TYPE_CGROUP_DEVICE program is attached to the attempt's cgroup
// (BpfDeviceFilter). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace baton {

// A character device number.
struct CharDevice {
  uint32_t major = 0;
  uint32_t minor = 0;
  bool operator==(const CharDevice&) const = default;
  bool operator<(const CharDevice& o) const {
    return major != o.major ? major < o.major : minor < o.minor;
  }
};

// /dev/nvidia<minor>: the NVIDIA driver's fixed major.
inline constexpr uint32_t kNvidiaMajor = 195;

class DeviceFilter {
 public:
  virtual ~DeviceFilter() = default;
  // Refuses `denied` (read, write, mknod) to every process in the cgroup directory
  // `cgroup_dir` and allows every other device.
  virtual absl::Status Deny(const std::string& cgroup_dir,
                            const std::vector<CharDevice>& denied) = 0;
};

// The BPF device program, loaded with bpf(2) and attached with BPF_F_ALLOW_MULTI (a
// parent's programs, systemd's say, keep their say too). The attachment lives as long as
// the cgroup does. Needs CAP_BPF and CAP_SYS_ADMIN (root).
class BpfDeviceFilter : public DeviceFilter {
 public:
  absl::Status Deny(const std::string& cgroup_dir, const std::vector<CharDevice>& denied) override;
  // Loads (and drops) a program: OK when this kernel and these rights can fence devices.
  static absl::Status Probe();
};

}  // namespace baton
