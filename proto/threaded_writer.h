// Server-stream helpers. ThreadedWriteReactor: a server-streaming reactor fed by a thread
// of its own, for producers that block (a
// file being followed, an upstream stream being relayed). Subclasses implement Produce(),
// which calls Write() — it returns once gRPC has taken the message, false when the client
// is gone — and returns the final status. The reactor deletes itself once gRPC is done
// and the thread has finished. Create with `new`, then call Start().
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace baton {

template <typename T>
class ThreadedWriteReactor : public grpc::ServerWriteReactor<T> {
 public:
  void Start() {
    std::thread([this] {
      grpc::Status status = Produce();
      this->Finish(status);
      std::lock_guard<std::mutex> lock(mu_);
      thread_done_ = true;
      cv_.notify_all();
    }).detach();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    write_ok_ = ok;
    cv_.notify_all();
  }
  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      cv_.notify_all();
    }
    OnCancelled();
  }
  void OnDone() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return thread_done_; });
    lock.unlock();
    delete this;
  }

 protected:
  ~ThreadedWriteReactor() override = default;

  // Runs on the reactor's thread; its result ends the call.
  virtual grpc::Status Produce() = 0;
  // Called (on a gRPC thread) when the client cancels, e.g. to cancel an upstream call.
  virtual void OnCancelled() {}

  // Sends one message and waits until it is on its way; false if the client is gone.
  bool Write(const T& msg) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_) return false;
    writing_ = true;
    lock.unlock();
    this->StartWrite(&msg);
    lock.lock();
    cv_.wait(lock, [this] { return !writing_; });
    return write_ok_ && !cancelled_;
  }
  // Waits `d` unless the client cancels first; false when cancelled.
  bool Pause(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, d, [this] { return cancelled_; });
    return !cancelled_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool write_ok_ = true;
  bool cancelled_ = false;
  bool thread_done_ = false;
};

// A server stream that ends at once with `status` (refused calls).
template <typename T>
grpc::ServerWriteReactor<T>* FinishedStream(const grpc::Status& status) {
  class Finished : public grpc::ServerWriteReactor<T> {
   public:
    explicit Finished(const grpc::Status& s) { this->Finish(s); }
    void OnDone() override { delete this; }
  };
  return new Finished(status);
}

}  // namespace baton
