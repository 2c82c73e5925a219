// Functions of a shared library that is loaded when one of them is first
// called, not when the program starts. Every command pays at start for
// each library the binary names (libcurl brings TLS, Kerberos and LDAP;
// libgit2 brings its own TLS and ssh): loaded on first use, a command
// pays only for those it calls, and `git zipnn --version` for none.
//
// A user declares each function it calls, inside its own namespace,
// under the library's name for it:
//
//   ZIPNN_LAZY("libcurl.so.4", curl_easy_init)
//
// so that calls written as before find this one, not the library's, and
// the binary no longer links the library (a call missed is a link
// error). A library or function that cannot be found ends the program
// with a message naming it, as the loader would have at start.
//
// Thread-safe: a function is looked up once, whichever thread asks.
#pragma once

#include <atomic>
#include <utility>

namespace zipnn {

// The address of `name` in the library `soname`, which is opened once;
// never null (the program ends first, saying what is missing).
void* LibrarySymbol(const char* soname, const char* name);

// The address of a function of type F, looked up when first asked for.
template <typename F>
class LazyAddress {
 public:
  constexpr LazyAddress(const char* soname, const char* name) : soname_(soname), name_(name) {}

 protected:
  F* Get() const {
    F* f = fn_.load(std::memory_order_acquire);
    if (f == nullptr) {
      f = reinterpret_cast<F*>(LibrarySymbol(soname_, name_));
      fn_.store(f, std::memory_order_release);
    }
    return f;
  }

 private:
  const char* soname_;
  const char* name_;
  mutable std::atomic<F*> fn_{nullptr};
};

template <typename F>
class LazyFunction;

template <typename R, typename... A>
class LazyFunction<R(A...)> : public LazyAddress<R(A...)> {
 public:
  using LazyAddress<R(A...)>::LazyAddress;
  R operator()(A... a) const { return this->Get()(std::forward<A>(a)...); }
};

// A C function with variable arguments (curl_easy_setopt).
template <typename R, typename... A>
class LazyFunction<R(A..., ...)> : public LazyAddress<R(A..., ...)> {
 public:
  using LazyAddress<R(A..., ...)>::LazyAddress;
  template <typename... V>
  R operator()(A... a, V... v) const {
    return this->Get()(a..., v...);
  }
};

// The same for functions their header declares noexcept (glibc's).
template <typename R, typename... A>
class LazyFunction<R(A...) noexcept> : public LazyFunction<R(A...)> {
 public:
  using LazyFunction<R(A...)>::LazyFunction;
};
template <typename R, typename... A>
class LazyFunction<R(A..., ...) noexcept> : public LazyFunction<R(A..., ...)> {
 public:
  using LazyFunction<R(A..., ...)>::LazyFunction;
};

}  // namespace zipnn

// A macro's value as a string literal ("3" for OPENSSL_SHLIB_VERSION).
#define ZIPNN_STRING(x) ZIPNN_STRING_OF(x)
#define ZIPNN_STRING_OF(x) #x

// Declares `name`, a function of the C library `soname` whose header is
// included, as a LazyFunction of the same type in the current namespace.
#define ZIPNN_LAZY(soname, name) inline const ::zipnn::LazyFunction<decltype(::name)> name{soname, #name};
