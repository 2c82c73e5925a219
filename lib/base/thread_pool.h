// A fixed-size pool of worker threads that runs submitted tasks in any
// order. Callers keep results in order themselves (the codec keeps a window
// of results). With one thread the pool has no workers at all: Submit runs
// the task on the caller's thread, so "--threads 1" means one core, exactly.
//
// Submit is thread-safe. The destructor waits for queued tasks to finish.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
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

// Runs produce(0..count-1) on the pool, at most 2 x parallelism ahead of
// the last result consumed, and hands each result to consume() in index
// order. consume() runs on whichever worker finished the result that was
// next in line, never two at once: a stripe is hashed and written by the
// core that just decoded it, while it is still in that core's cache, and
// the calling thread only waits (it would otherwise be a third thread
// competing for two cores). The first error stops new work; every task has
// finished before RunOrdered returns, so produce and consume may use the
// caller's locals. An exception thrown by produce or consume (an
// allocation refused) counts as an error in its place and, when it is the
// first, is thrown again on the calling thread once every task has ended,
// as the plain loop would throw it.
template <typename T, typename Produce, typename Consume>
Status RunOrdered(ThreadPool& pool, size_t count, Produce produce, Consume consume) {
  if (pool.parallelism() == 1) {  // no workers: plain loop on this thread
    for (size_t i = 0; i < count; ++i) {
      Result<T> r = produce(i);
      if (!r.ok()) return r.status();
      ZIPNN_RETURN_IF_ERROR(consume(i, *r));
    }
    return OkStatus();
  }
  struct State {
    std::mutex mu;
    std::condition_variable finished;
    std::vector<std::unique_ptr<Result<T>>> ready;  // a ring: result i in slot i % size
    size_t next_submit = 0;
    size_t next_consume = 0;
    size_t running = 0;  // tasks submitted and not yet returned
    bool consuming = false;
    Status status;
    std::vector<std::exception_ptr> threw;  // beside ready: what produce threw for that result
    std::exception_ptr thrown;              // when the first error in order was a throw
  };
  auto state = std::make_shared<State>();
  const size_t window = 2 * static_cast<size_t>(pool.parallelism());
  state->ready.resize(window);
  state->threw.resize(window);

  // Called with the lock held. A task must not outlive RunOrdered's frame,
  // so `run` is only ever called while some task is still counted.
  std::function<void(size_t)> run;
  auto submit_more = [&] {
    State& st = *state;
    while (st.status.ok() && st.next_submit < count && st.next_submit < st.next_consume + window) {
      const size_t i = st.next_submit++;
      ++st.running;
      pool.Submit([&run, i, keep = state] { run(i); });  // keep: the lock outlives the wait
    }
  };
  // What `f` throws, or null.
  auto caught = [](auto&& f) -> std::exception_ptr {
    try {
      f();
      return nullptr;
    } catch (...) {
      return std::current_exception();
    }
  };
  run = [&](size_t i) {
    std::unique_ptr<Result<T>> r;
    const std::exception_ptr threw = caught([&] { r = std::make_unique<Result<T>>(produce(i)); });
    if (threw) r = std::make_unique<Result<T>>(Status(StatusCode::kIoError, "a task threw"));
    State& st = *state;
    std::unique_lock<std::mutex> lock(st.mu);
    st.ready[i % window] = std::move(r);
    st.threw[i % window] = threw;
    if (!st.consuming) {
      st.consuming = true;
      while (st.next_consume < count && st.ready[st.next_consume % window] != nullptr) {
        std::unique_ptr<Result<T>> item = std::move(st.ready[st.next_consume % window]);
        std::exception_ptr threw_here = std::move(st.threw[st.next_consume % window]);
        const size_t at = st.next_consume;
        const bool ok = st.status.ok();
        lock.unlock();
        Status done = OkStatus();
        if (ok && item->ok()) {
          threw_here = caught([&] { done = consume(at, **item); });
          if (threw_here) done = Status(StatusCode::kIoError, "a task threw");
        } else if (ok) {
          done = item->status();
        }
        item.reset();
        lock.lock();
        if (st.status.ok() && !done.ok()) st.thrown = std::move(threw_here);
        if (st.status.ok()) st.status = std::move(done);
        ++st.next_consume;
        submit_more();
      }
      st.consuming = false;
    }
    if (--st.running == 0) st.finished.notify_all();
  };

  std::unique_lock<std::mutex> lock(state->mu);
  submit_more();
  state->finished.wait(lock, [&] { return state->running == 0; });
  if (state->thrown) std::rethrow_exception(state->thrown);
  return state->status;
}

// Runs task(0..count-1), up to `threads` at once on threads of their own
// (transfers that mostly wait: the parts of an object on their
// connections); the first error, once every task started has ended.
inline Status RunAll(int threads, size_t count, const std::function<Status(size_t)>& task) {
  ThreadPool pool(static_cast<int>(std::min<size_t>(count, static_cast<size_t>(std::max(1, threads)))));
  return RunOrdered<bool>(
      pool, count,
      [&](size_t i) -> Result<bool> {
        ZIPNN_RETURN_IF_ERROR(task(i));
        return true;
      },
      [](size_t, bool) { return OkStatus(); });
}

// At most so many at once (transfers on connections): Take waits for a
// slot, which goes back when the handle it returns goes.
class Slots {
 public:
  explicit Slots(int n) : free_(std::max(1, n)) {}
  std::shared_ptr<void> Take() {
    std::unique_lock<std::mutex> lock(mu_);
    freed_.wait(lock, [this] { return free_ > 0; });
    --free_;
    return std::shared_ptr<void>(nullptr, [this](void*) {
      std::lock_guard<std::mutex> back(mu_);
      ++free_;
      freed_.notify_one();
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable freed_;
  int free_;
};

}  // namespace zipnn
