#include "launcher/agent/isolation/device_filter.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/status.h"

namespace baton {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// The program (struct bpf_cgroup_dev_ctx { u32 access_type, major, minor; } in r1):
//   type = access_type & 0xffff; if type != char: allow
//   for each denied (M, m): if major == M && minor == m: deny
//   allow
std::vector<bpf_insn> Program(const std::vector<CharDevice>& denied) {
  constexpr uint8_t r0 = BPF_REG_0, r1 = BPF_REG_1, r2 = BPF_REG_2, r3 = BPF_REG_3, r4 = BPF_REG_4;
  std::vector<bpf_insn> p;
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, r2, r1, 0, 0));      // access_type
  p.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, r2, 0, 0, 0xffff));  // the device type
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, r3, r1, 4, 0));      // major
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, r4, r1, 8, 0));      // minor
  // Jumps to `allow`/`deny` are patched once their places are known.
  std::vector<size_t> to_allow, to_deny;
  to_allow.push_back(p.size());
  p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, r2, 0, 0, BPF_DEVCG_DEV_CHAR));
  for (const CharDevice& d : denied) {
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, r3, 0, 1, static_cast<int32_t>(d.major)));
    to_deny.push_back(p.size());
    p.push_back(Insn(BPF_JMP | BPF_JEQ | BPF_K, r4, 0, 0, static_cast<int32_t>(d.minor)));
  }
  size_t allow = p.size();
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, r0, 0, 0, 1));
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  size_t deny = p.size();
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, r0, 0, 0, 0));
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  for (size_t at : to_allow) p[at].off = static_cast<int16_t>(allow - at - 1);
  for (size_t at : to_deny) p[at].off = static_cast<int16_t>(deny - at - 1);
  return p;
}

long Bpf(int cmd, bpf_attr* attr) { return syscall(SYS_bpf, cmd, attr, sizeof *attr); }

// A loaded program's fd, or the verifier's complaint.
absl::StatusOr<int> Load(const std::vector<CharDevice>& denied) {
  std::vector<bpf_insn> prog = Program(denied);
  static const char kLicense[] = "GPL";
  char log[4096] = {};
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(prog.data());
  attr.insn_cnt = static_cast<uint32_t>(prog.size());
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  attr.log_buf = reinterpret_cast<uint64_t>(log);
  attr.log_size = sizeof log;
  attr.log_level = 1;
  int fd = static_cast<int>(Bpf(BPF_PROG_LOAD, &attr));
  if (fd < 0) {
    int err = errno;
    return ErrnoToStatus(err, std::string("load the BPF device program") +
                                  (log[0] ? std::string(" (verifier: ") + log + ")" : ""));
  }
  return fd;
}

}  // namespace

absl::Status BpfDeviceFilter::Deny(const std::string& cgroup_dir,
                                   const std::vector<CharDevice>& denied) {
  if (denied.empty()) return absl::OkStatus();
  absl::StatusOr<int> prog = Load(denied);
  if (!prog.ok()) return prog.status();
  int dir = open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    int err = errno;
    close(*prog);
    return ErrnoToStatus(err, "open " + cgroup_dir);
  }
  bpf_attr attr{};
  attr.target_fd = static_cast<uint32_t>(dir);
  attr.attach_bpf_fd = static_cast<uint32_t>(*prog);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  long rc = Bpf(BPF_PROG_ATTACH, &attr);
  int err = errno;
  close(dir);
  close(*prog);  // the attachment holds its own reference
  if (rc != 0) return ErrnoToStatus(err, "attach the BPF device program to " + cgroup_dir);
  return absl::OkStatus();
}

absl::Status BpfDeviceFilter::Probe() {
  absl::StatusOr<int> prog = Load({CharDevice{kNvidiaMajor, 0}});
  if (!prog.ok()) return prog.status();
  close(*prog);
  return absl::OkStatus();
}

}  // namespace baton
