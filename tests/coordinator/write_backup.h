// What the Backup RPC and `baton admin backup` write, without the network, for tests of
// restores and snapshots: a checkpoint of a store fed through a BackupWriter in 64 KiB
// chunks with its manifest.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "common/backup_dir.h"
#include "coordinator/store.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {

inline absl::Status WriteBackup(Store& store, const std::string& dir) {
  TempDir scratch;
  const std::string cp = scratch.Sub("cp");
  if (absl::Status s = store.Checkpoint(cp); !s.ok()) return s;
  auto writer = BackupWriter::Start(dir);
  if (!writer.ok()) return writer.status();
  v1::BackupManifest manifest;
  for (const auto& entry : std::filesystem::directory_iterator(cp)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), {});
    Sha256 hash;
    hash.Update(data.data(), data.size());
    auto* f = manifest.add_files();
    f->set_name(name);
    f->set_size(data.size());
    f->set_sha256(hash.HexDigest());
    size_t off = 0;
    do {
      v1::BackupChunk chunk;
      chunk.set_file(name);
      chunk.set_offset(off);
      chunk.set_data(data.substr(off, 64 << 10));
      off += chunk.data().size();
      if (absl::Status s = writer->Add(chunk); !s.ok()) return s;
    } while (off < data.size());
  }
  return writer->Finish(manifest);
}

}  // namespace baton::testing
