// RunOrdered: results reach consume() once each, in index order, one at a
// time, whatever order the workers finish in; the first error stops the
// run and nothing is left running when it returns, as does a task that
// throws (its exception then reaches the caller).
#include "lib/base/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

namespace zipnn {
namespace {

// Sleeps a scrambled few microseconds so that tasks finish out of order.
void Jitter(size_t i) { std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 97)); }

TEST_CASE("RunOrdered consumes every result once, in order, never two at once") {
  for (int threads : {1, 2, 4}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{700}}) {
      CAPTURE(threads);
      CAPTURE(count);
      ThreadPool pool(threads);
      std::vector<size_t> seen;
      std::atomic<int> inside{0};
      int most_inside = 0;
      Status st = RunOrdered<size_t>(
          pool, count,
          [](size_t i) -> Result<size_t> {
            Jitter(i);
            return i * 3;
          },
          [&](size_t i, size_t v) -> Status {
            most_inside = std::max(most_inside, ++inside);
            if (v != i * 3) return Corruption("result " + std::to_string(i) + " is another's");
            seen.push_back(i);
            Jitter(i + 1);
            --inside;
            return OkStatus();
          });
      REQUIRE(st.ok());
      REQUIRE(seen.size() == count);
      for (size_t i = 0; i < count; ++i) CHECK(seen[i] == i);
      CHECK(most_inside <= 1);
    }
  }
}

TEST_CASE("RunOrdered stops at the first error or throw and returns (or throws) only when no task runs") {
  for (int threads : {1, 2, 4}) {
    for (bool in_consume : {false, true}) {
      for (bool throws : {false, true}) {  // a throw once left the run waiting forever
        CAPTURE(threads);
        CAPTURE(in_consume);
        CAPTURE(throws);
        ThreadPool pool(threads);
        std::atomic<int> running{0};
        std::atomic<size_t> produced{0};
        size_t consumed = 0;
        std::string failed;
        try {
          Status st = RunOrdered<size_t>(
              pool, 1000,
              [&](size_t i) -> Result<size_t> {
                ++running;
                ++produced;
                Jitter(i);
                --running;
                if (!in_consume && i == 57 && throws) throw std::bad_alloc();
                if (!in_consume && i == 57) return IoError("read failed at 57");
                return i;
              },
              [&](size_t i, size_t) -> Status {
                if (in_consume && i == 57 && throws) throw std::bad_alloc();
                if (in_consume && i == 57) return IoError("write failed at 57");
                consumed = i + 1;
                return OkStatus();
              });
          failed = st.message();
        } catch (const std::bad_alloc&) {
          failed = "threw";
        }
        CHECK(running == 0);
        CHECK(failed == (throws ? "threw" : in_consume ? "write failed at 57" : "read failed at 57"));
        CHECK(consumed == 57);
        CHECK(produced <= 57 + 1 + 2 * static_cast<size_t>(threads));  // the window, not the whole run
      }
    }
  }
}

TEST_CASE("with workers, results are consumed on a worker, not the calling thread") {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = false;
  Status st = RunOrdered<int>(
      pool, 50, [](size_t) -> Result<int> { return 1; },
      [&](size_t, int) -> Status {
        on_caller = on_caller || std::this_thread::get_id() == caller;
        return OkStatus();
      });
  REQUIRE(st.ok());
  CHECK_FALSE(on_caller);
}

}  // namespace
}  // namespace zipnn
