// The heads `git zipnn cat` writes: a safetensors head that our own reader
// takes back exactly, and .npy heads as numpy's format 1.0 spells them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/tensor_file.h"

namespace zipnn::formats {
namespace {

using codec::DType;

Tensor Make(std::string name, DType dtype, std::vector<uint64_t> shape, uint64_t length) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.length = length;
  return t;
}

TEST_CASE("a safetensors head reads back as the tensors it was written for") {
  const std::vector<Tensor> tensors = {Make("layers.1.w", DType::kBF16, {3, 4}, 24),
                                       Make("b\"ias", DType::kF32, {5}, 20), Make("scalar", DType::kI64, {}, 8),
                                       Make("empty", DType::kF16, {0, 7}, 0)};
  auto head = SafetensorsHead(tensors);
  REQUIRE(head.ok());
  CHECK((head->size() - 8) % 8 == 0);
  std::string file = *head + std::string(52, '\x5a');
  MemorySource source(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "out.safetensors");
  auto layout = ReadSafetensors(source);
  REQUIRE(layout.ok());
  CHECK(layout->format == Format::kSafetensors);
  CHECK(layout->warnings.empty());
  // The reader lists tensors by offset; the empty one sits at the end.
  std::vector<std::string> names;
  for (const Tensor& t : layout->tensors) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"layers.1.w", "b\"ias", "scalar", "empty"});
  uint64_t at = head->size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].name);
    const Tensor& got = layout->tensors[i];
    CHECK(got.dtype == tensors[i].dtype);
    CHECK(got.shape == tensors[i].shape);
    CHECK(got.offset == at);
    CHECK(got.length == tensors[i].length);
    at += tensors[i].length;
  }
}

TEST_CASE("a safetensors head refuses opaque bytes, a name used twice, and a name that is not UTF-8") {
  CHECK(SafetensorsHead({Make("pickle", DType::kBytes, {9}, 9)}).status().message() ==
        "'pickle' is opaque bytes, which safetensors has no dtype for");
  CHECK(SafetensorsHead({Make("w", DType::kF32, {1}, 4), Make("w", DType::kF32, {1}, 4)}).status().message() ==
        "two tensors are named 'w'");
  CHECK(SafetensorsHead({Make("model/\xff\xfe", DType::kF32, {1}, 4)}).status().message() ==
        "a tensor name is not UTF-8 text, which a safetensors header cannot hold; write it raw");
}

TEST_CASE("npy heads are numpy's format 1.0, the data 64-byte aligned") {
  auto head = NpyHead(Make("w", DType::kF32, {3, 4}, 48));
  REQUIRE(head.ok());
  // The bytes numpy.save writes for a float32 array of shape (3, 4).
  CHECK(head->size() == 128);
  CHECK(head->substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  CHECK(head->substr(10) ==
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + std::string(58, ' ') + "\n");
  CHECK(NpyHead(Make("v", DType::kI64, {7}, 56))->find("'shape': (7,), }") != std::string::npos);
  CHECK(NpyHead(Make("s", DType::kU8, {}, 1))->find("'descr': '|u1', 'fortran_order': False, 'shape': (), }") !=
        std::string::npos);
  CHECK(NpyHead(Make("b", DType::kBool, {2}, 2))->find("'|b1'") != std::string::npos);
  CHECK(NpyHead(Make("h", DType::kBF16, {2}, 4)).status().message() ==
        "'h' is bf16, which numpy has no type for; write it as safetensors or raw instead");
}

}  // namespace
}  // namespace zipnn::formats
