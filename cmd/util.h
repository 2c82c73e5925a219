// Small helpers shared by the commands: output naming, number formatting,
// a sink for standard output, and the common --threads option.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn::cmd {

inline constexpr char kObjectSuffix[] = ".zipnn";

// "12.3 MiB"
std::string HumanBytes(uint64_t n);
// "66.21%": stored as a share of raw ("n/a" when raw is empty).
std::string Percent(uint64_t part, uint64_t whole);

// Writes to file descriptor 1.
class StdoutSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override;
};

void AddThreadsOption(CLI::App& sub, int& threads);

}  // namespace zipnn::cmd
