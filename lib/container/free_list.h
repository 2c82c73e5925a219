// FreeList: objects that are costly to make (coders with scratch buffers
// and zstd contexts, stripe buffers) kept for reuse instead of made per
// task, which keeps the allocator and the page faults of fresh memory off
// the hot path. Internal to lib/container. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace zipnn::container {

// Borrow returns a lease that gives the object back when it goes out of
// scope; Take and Give move ownership explicitly (for stripe results that
// travel from a worker to the writing thread).
template <typename T>
class FreeList {
 public:
  class Lease {
   public:
    Lease(FreeList* owner, std::unique_ptr<T> item) : owner_(owner), item_(std::move(item)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { owner_->Give(std::move(item_)); }
    T* operator->() { return item_.get(); }
    T& operator*() { return *item_; }

   private:
    FreeList* owner_;
    std::unique_ptr<T> item_;
  };

  explicit FreeList(std::function<std::unique_ptr<T>()> make) : make_(std::move(make)) {}

  std::unique_ptr<T> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return make_();
    std::unique_ptr<T> t = std::move(free_.back());
    free_.pop_back();
    return t;
  }
  void Give(std::unique_ptr<T> t) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(t));
  }
  Lease Borrow() { return Lease(this, Take()); }

 private:
  std::function<std::unique_ptr<T>()> make_;
  std::mutex mu_;
  std::vector<std::unique_ptr<T>> free_;
};

}  // namespace zipnn::container
