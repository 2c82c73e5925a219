// A fixed-size pool of worker threads that runs submitted tasks in any
// order. Callers keep results in order themselves (the codec keeps a window
// of futures). With one thread the pool has no workers at all: Submit runs
// the task on the caller's thread, so "--threads 1" means one core, exactly.
//
// Submit is thread-safe. The destructor waits for queued tasks to finish.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/base/status.h"

namespace zipnn {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Number of tasks that can run at the same time (at least 1).
  int parallelism() const { return workers_.empty() ? 1 : static_cast<int>(workers_.size()); }

  template <typename F>
  auto Submit(F&& f) -> std::future<decltype(f())> {
    using R = decltype(f());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(f));
    std::future<R> result = task->get_future();
    if (workers_.empty()) {
      (*task)();
    } else {
      Enqueue([task] { (*task)(); });
    }
    return result;
  }

  // All cores of this machine (at least 1).
  static int DefaultThreads();

 private:
  void Enqueue(std::function<void()> job);
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Runs produce(0..count-1) on the pool, at most 2 x parallelism at a time,
// and hands each result to consume() on the calling thread in index order.
// The first error stops new work; tasks already running are waited for
// before returning, so produce may use the caller's locals.
template <typename T, typename Produce, typename Consume>
Status RunOrdered(ThreadPool& pool, size_t count, Produce produce, Consume consume) {
  const size_t window = 2 * static_cast<size_t>(pool.parallelism());
  std::deque<std::future<Result<T>>> inflight;
  size_t next = 0;
  Status status;
  for (size_t done = 0; done < count; ++done) {
    while (status.ok() && next < count && inflight.size() < window) {
      const size_t i = next++;
      inflight.push_back(pool.Submit([&produce, i]() -> Result<T> { return produce(i); }));
    }
    if (inflight.empty()) break;
    Result<T> r = inflight.front().get();
    inflight.pop_front();
    if (status.ok()) status = r.ok() ? consume(done, *r) : r.status();
  }
  for (auto& f : inflight) f.wait();
  return status;
}

}  // namespace zipnn
