// _baton: the Python binding of libbaton_checkpoint, used by the pure-Python modules of the
// `baton` package (checkpoint.py, preemption.py, progress.py), not by users directly.
// Buffers are registered without copying (buffer protocol, or an address plus an owner kept
// alive); the GIL is released during every call that does I/O or talks to other ranks, and a
// Python collective (torch.distributed) is called back with the GIL re-acquired, also from
// the async save's background thread. Library errors become CheckpointError (or a subclass)
// carrying the library's message and its status code name in `.code`.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/collective.h"
#include "checkpoint/env.h"
#include "checkpoint/fence.h"
#include "checkpoint/job_env.h"
#include "checkpoint/preemption.h"
#include "checkpoint/progress.h"
#include "common/clock.h"
#ifdef BATON_WITH_CUDA
#include "checkpoint/cuda_device_memory.h"
#endif

namespace py = pybind11;
namespace ck = baton::checkpoint;

namespace {

// The exception classes, created once at import (module state lives as long as the process).
struct Errors {
  py::handle base;        // CheckpointError(RuntimeError)
  py::handle value;       // CheckpointValueError(CheckpointError, ValueError): InvalidArgument
  py::handle superseded;  // SupersededError(CheckpointError): a newer attempt owns the dir
};
Errors g_errors;

// Raises the Python exception for a non-OK status. Needs the GIL.
[[noreturn]] void Raise(const absl::Status& status) {
  py::handle cls = g_errors.base;
  if (ck::IsSuperseded(status)) {
    cls = g_errors.superseded;
  } else if (status.code() == absl::StatusCode::kInvalidArgument) {
    cls = g_errors.value;
  }
  py::object error = cls(std::string(status.message()));
  error.attr("code") = absl::StatusCodeToString(status.code());
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

void Check(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Check(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return *std::move(value);
}

// A Collective implemented by a Python object with rank(), size(), all_reduce_max(int),
// all_gather(bytes) -> list[bytes], broadcast(bytes) -> bytes (baton/_collective.py wraps
// torch.distributed). Every call takes the GIL, so the caller must not hold it while it
// waits for other ranks. A Python exception becomes Unavailable with its text.
class PyCollective final : public ck::Collective {
 public:
  explicit PyCollective(py::object impl) : impl_(std::move(impl)) {
    rank_ = impl_.attr("rank")().cast<int>();
    size_ = impl_.attr("size")().cast<int>();
    if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
      throw py::value_error("collective reports rank " + std::to_string(rank_) + " of " +
                            std::to_string(size_));
    }
  }
  ~PyCollective() override {
    py::gil_scoped_acquire gil;
    impl_ = py::object();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::StatusOr<int64_t> AllReduceMax(int64_t value) override {
    py::gil_scoped_acquire gil;
    return Call<int64_t>("all_reduce_max", py::int_(value));
  }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) override {
    py::gil_scoped_acquire gil;  // before the bytes object is made
    return Call<std::vector<std::string>>("all_gather", py::bytes(value));
  }
  absl::StatusOr<std::string> Broadcast(const std::string& value) override {
    py::gil_scoped_acquire gil;
    return Call<std::string>("broadcast", py::bytes(value));
  }
  // The Python side uses a process group of its own for the Checkpointer.
  bool SupportsBackgroundThread() const override { return true; }

 private:
  // Needs the GIL. Any exception becomes Unavailable: nothing may escape into the library
  // (the async save's thread would terminate the process).
  template <typename T>
  absl::StatusOr<T> Call(const char* method, const py::object& arg) {
    try {
      return impl_.attr(method)(arg).template cast<T>();
    } catch (const std::exception& e) {  // py::error_already_set among them
      return absl::UnavailableError(std::string("collective ") + method + " failed: " + e.what());
    }
  }

  py::object impl_;
  int rank_ = 0;
  int size_ = 1;
};

std::unique_ptr<ck::Collective> MakeCollective(const py::object& impl) {
  if (impl.is_none()) return std::make_unique<ck::LocalCollective>();
  return std::make_unique<PyCollective>(impl);
}

py::dict InfoToDict(const ck::CheckpointInfo& info) {
  py::dict d;
  d["step"] = info.step;
  d["attempt"] = info.attempt;
  d["world_size"] = info.world_size;
  d["time_ms"] = info.time_ms;
  d["bytes"] = info.bytes;
  py::dict meta;
  for (const auto& [k, v] : info.metadata) meta[py::bytes(k)] = py::bytes(v);
  d["metadata"] = meta;
  return d;
}

// Whether a buffer's strides describe one C-contiguous block (any stride of a dimension of
// size 1 is fine).
bool IsCContiguous(const py::buffer_info& b) {
  py::ssize_t expected = b.itemsize;
  for (py::ssize_t i = b.ndim - 1; i >= 0; --i) {
    if (b.shape[i] != 1 && b.strides[i] != expected) return false;
    expected *= b.shape[i];
  }
  return true;
}

// One Checkpointer with its collective and the Python objects whose memory it registered.
class PyCheckpointer {
 public:
  PyCheckpointer(ck::Options options, py::object collective, bool use_device_memory)
      : collective_(MakeCollective(collective)) {
    if (use_device_memory) {
#ifdef BATON_WITH_CUDA
      device_memory_ = Check(ck::NewCudaDeviceMemory());
      options.device_memory = device_memory_.get();
#else
      throw py::value_error("this build of baton has no CUDA support (device buffers)");
#endif
    }
    ck::Collective* c = collective_.get();
    absl::StatusOr<std::unique_ptr<ck::Checkpointer>> created;
    {
      py::gil_scoped_release nogil;
      created = ck::Checkpointer::Create(std::move(options), c);
    }
    ckpt_ = Check(std::move(created));
  }
  ~PyCheckpointer() { Close(); }

  // Waits for background work (without the GIL: it may call the collective), then drops
  // the collective and the registered objects.
  void Close() {
    if (ckpt_) {
      py::gil_scoped_release nogil;
      ckpt_.reset();
    }
    collective_.reset();
    views_.clear();
    owners_.clear();
  }

  // Any object with the buffer protocol: writable, C-contiguous, no Python objects inside.
  void RegisterBuffer(const std::string& name, const py::buffer& obj) {
    auto view = std::make_unique<py::buffer_info>(obj.request(/*writable=*/true));
    if (view->format == "O") {
      throw py::type_error("buffer '" + name + "' holds Python objects, not plain data");
    }
    if (!IsCContiguous(*view)) {
      throw py::value_error("buffer '" + name +
                            "' is not contiguous: register a contiguous array "
                            "(numpy.ascontiguousarray makes a copy, which restore would not "
                            "fill; keep and train on that copy)");
    }
    const size_t bytes = static_cast<size_t>(view->size * view->itemsize);
    Check(Open().RegisterHostBuffer(name, view->ptr, bytes));
    views_.push_back(std::move(view));  // holds the export: the array cannot be resized
  }

  // Raw memory owned by `owner` (a torch tensor), kept alive as long as this object.
  void RegisterPointer(const std::string& name, uintptr_t address, size_t bytes, py::object owner,
                       bool device) {
    void* data = reinterpret_cast<void*>(address);
    Check(device ? Open().RegisterDeviceBuffer(name, data, bytes)
                 : Open().RegisterHostBuffer(name, data, bytes));
    owners_.push_back(std::move(owner));
  }

  void SetMetadata(const std::string& key, const std::string& value) {
    Check(Open().SetMetadata(key, value));
  }
  py::dict Metadata() {
    py::dict d;
    for (const auto& [k, v] : Open().metadata()) d[py::bytes(k)] = py::bytes(v);
    return d;
  }

  void Save(int64_t step) {
    Check(Unlocked([&](ck::Checkpointer& c) { return c.Save(step); }));
  }
  void SaveAsync(int64_t step) {
    Check(Unlocked([&](ck::Checkpointer& c) { return c.SaveAsync(step); }));
  }
  void Wait() {
    Check(Unlocked([](ck::Checkpointer& c) { return c.Wait(); }));
  }
  void ReserveStaging() {
    Check(Unlocked([](ck::Checkpointer& c) { return c.ReserveStaging(); }));
  }

  py::object RestoreLatest() {
    absl::StatusOr<std::optional<ck::CheckpointInfo>> r;
    ck::Checkpointer& c = Open();
    {
      py::gil_scoped_release nogil;
      r = c.RestoreLatest();
    }
    std::optional<ck::CheckpointInfo> info = Check(std::move(r));
    if (!info) return py::none();
    return InfoToDict(*info);
  }

  py::list List() {
    absl::StatusOr<std::vector<ck::CheckpointInfo>> r;
    ck::Checkpointer& c = Open();
    {
      py::gil_scoped_release nogil;
      r = c.List();
    }
    py::list out;
    for (const ck::CheckpointInfo& info : Check(std::move(r))) out.append(InfoToDict(info));
    return out;
  }

  int64_t LastCommittedStep() { return Open().last_committed_step(); }
  int Rank() { return Open().rank(); }
  int WorldSize() { return Open().world_size(); }

 private:
  ck::Checkpointer& Open() {
    if (!ckpt_) throw py::value_error("the Checkpointer is closed");
    return *ckpt_;
  }
  template <typename F>
  absl::Status Unlocked(F f) {
    ck::Checkpointer& c = Open();
    py::gil_scoped_release nogil;
    return f(c);
  }

  std::unique_ptr<ck::Collective> collective_;
  std::unique_ptr<ck::DeviceMemory> device_memory_;
  std::unique_ptr<ck::Checkpointer> ckpt_;  // declared last: destroyed first
  std::vector<std::unique_ptr<py::buffer_info>> views_;
  std::vector<py::object> owners_;
};

// The process's PreemptionWatcher (SIGUSR1 handler) with ShouldStop over a Python
// collective (None: this process alone).
class PyWatcher {
 public:
  explicit PyWatcher(const ck::PreemptionOptions& options)
      : watcher_(Check(ck::PreemptionWatcher::Create(options))) {}

  bool ShouldStop(const py::object& collective) {
    std::unique_ptr<ck::Collective> c = MakeCollective(collective);
    absl::StatusOr<bool> r;
    {
      py::gil_scoped_release nogil;
      r = watcher_->ShouldStop(*c);
    }
    return Check(std::move(r));
  }
  ck::PreemptionWatcher& get() { return *watcher_; }

 private:
  std::unique_ptr<ck::PreemptionWatcher> watcher_;
};

// Rank 0's progress note (FORMAT.md "Progress file") for programs that save on their own:
// `path` "" means BATON_PROGRESS_FILE, else <BATON_CHECKPOINT_DIR>/PROGRESS. Returns the
// path written, or None when the job runs outside baton (neither variable set).
py::object WriteProgress(const std::string& state, int64_t step, int64_t committed_step,
                         std::string path, int64_t attempt) {
  if (path.empty()) {
    const std::string dir = ck::CheckpointDirFromEnv();
    const char* file = std::getenv("BATON_PROGRESS_FILE");
    if (dir.empty() && (file == nullptr || *file == '\0')) return py::none();
    path = ck::ProgressFilePath(dir);
  }
  if (attempt < 0) attempt = Check(ck::AttemptFromEnv());
  const ck::Progress p{attempt, state, step, committed_step, baton::RealClock::Get()->NowMs()};
  // Validate as the agent will read it.
  Check(ck::ParseProgress(ck::EncodeProgress(p)).status());
  absl::Status written;
  {
    py::gil_scoped_release nogil;
    written = ck::ReplaceFileContents(ck::DefaultEnv(), path, ck::EncodeProgress(p));
  }
  Check(written);
  return py::str(path);
}

}  // namespace

PYBIND11_MODULE(_baton, m) {
  m.doc() = "libbaton_checkpoint binding; use baton.checkpoint, baton.torch, baton.preemption";

  py::object base = py::reinterpret_steal<py::object>(
      PyErr_NewException("baton.CheckpointError", PyExc_RuntimeError, nullptr));
  py::tuple value_bases = py::make_tuple(base, py::handle(PyExc_ValueError));
  py::object value = py::reinterpret_steal<py::object>(
      PyErr_NewException("baton.CheckpointValueError", value_bases.ptr(), nullptr));
  py::object superseded = py::reinterpret_steal<py::object>(
      PyErr_NewException("baton.SupersededError", base.ptr(), nullptr));
  if (!base || !value || !superseded) throw py::error_already_set();
  m.attr("CheckpointError") = base;
  m.attr("CheckpointValueError") = value;
  m.attr("SupersededError") = superseded;
  g_errors = {base.release(), value.release(), superseded.release()};  // live for the process
#ifdef BATON_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif

  py::class_<PyCheckpointer>(m, "Checkpointer")
      .def(py::init([](const std::string& dir, int keep_last, int io_threads,
                       uint64_t io_unit_bytes, bool direct_io, bool io_in_place, int64_t attempt,
                       const std::string& progress_file, py::object collective, bool device_memory,
                       std::function<void(const std::string&)> log) {
             ck::Options o;
             o.dir = dir;
             o.keep_last = keep_last;
             o.io_threads = io_threads;
             o.io_unit_bytes = io_unit_bytes;
             o.direct_io = direct_io;
             o.io_in_place = io_in_place;
             o.attempt = attempt;
             o.progress_file = progress_file;
             o.log = std::move(log);
             return std::make_unique<PyCheckpointer>(std::move(o), std::move(collective),
                                                     device_memory);
           }),
           py::arg("dir"), py::arg("keep_last"), py::arg("io_threads"), py::arg("io_unit_bytes"),
           py::arg("direct_io"), py::arg("io_in_place"), py::arg("attempt"),
           py::arg("progress_file"), py::arg("collective"), py::arg("device_memory"),
           py::arg("log"))
      .def("close", &PyCheckpointer::Close)
      .def("register_buffer", &PyCheckpointer::RegisterBuffer, py::arg("name"), py::arg("obj"))
      .def("register_pointer", &PyCheckpointer::RegisterPointer, py::arg("name"),
           py::arg("address"), py::arg("nbytes"), py::arg("owner"), py::arg("device"))
      .def("set_metadata", &PyCheckpointer::SetMetadata)
      .def("metadata", &PyCheckpointer::Metadata)
      .def("save", &PyCheckpointer::Save)
      .def("save_async", &PyCheckpointer::SaveAsync)
      .def("wait", &PyCheckpointer::Wait)
      .def("reserve_staging", &PyCheckpointer::ReserveStaging)
      .def("restore_latest", &PyCheckpointer::RestoreLatest)
      .def("list", &PyCheckpointer::List)
      .def("last_committed_step", &PyCheckpointer::LastCommittedStep)
      .def("rank", &PyCheckpointer::Rank)
      .def("world_size", &PyCheckpointer::WorldSize);

  py::class_<PyWatcher>(m, "PreemptionWatcher")
      .def(py::init([](int signal, int64_t grace_seconds, const std::string& fence_dir,
                       int64_t attempt, int64_t fence_poll_ms) {
             ck::PreemptionOptions o;
             o.signal = signal;
             o.grace_seconds = grace_seconds;
             o.fence_dir = fence_dir;
             o.attempt = attempt;
             o.fence_poll_ms = fence_poll_ms;
             return std::make_unique<PyWatcher>(o);
           }),
           py::arg("signal"), py::arg("grace_seconds"), py::arg("fence_dir"), py::arg("attempt"),
           py::arg("fence_poll_ms"))
      .def("should_stop", &PyWatcher::ShouldStop, py::arg("collective"))
      .def("stop_requested", [](PyWatcher& w) { return w.get().StopRequested(); })
      .def("request_stop", [](PyWatcher& w) { w.get().RequestStop(); })
      .def("superseded_by", [](PyWatcher& w) { return w.get().superseded_by(); })
      .def("remaining_ms", [](PyWatcher& w) { return w.get().RemainingMs(); });

  m.def("write_progress", &WriteProgress, py::arg("state"), py::arg("step"),
        py::arg("committed_step"), py::arg("path"), py::arg("attempt"));
}
