#include "lib/base/lazy_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace zipnn {

namespace {

[[noreturn]] void Missing(const std::string& what) {
  std::fprintf(stderr, "git-zipnn: %s\n", what.c_str());
  std::exit(127);
}

}  // namespace

void* LibrarySymbol(const char* soname, const char* name) {
  static std::mutex mu;
  static std::map<std::string, void*>* opened = new std::map<std::string, void*>;  // never freed: used until exit
  void* library = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    void*& held = (*opened)[soname];
    if (held == nullptr) {
      held = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
      if (held == nullptr) {
        const char* why = ::dlerror();
        Missing(std::string("cannot load ") + soname + " (" + (why != nullptr ? why : "not found") +
                "): install it as the README says");
      }
    }
    library = held;
  }
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) Missing(std::string(soname) + " has no " + name + ": install the version git-zipnn was built with");
  return symbol;
}

}  // namespace zipnn
