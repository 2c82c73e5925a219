#include "lib/formats/torch_pickle.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "lib/base/endian.h"

namespace zipnn::formats {

namespace {

// Limits against hostile pickles.
constexpr size_t kMaxValues = 1u << 20;  // values (about 120 MB at worst), and memo entries
constexpr size_t kMaxDepth = 200;
// Marks open at once. A MARK costs one byte of input and a stack slot, and
// counts as no value: 30 MB of '(' alone took 300 MB. Python's pickler
// opens at most one mark per level of nesting, and its recursion limit
// (1000 by default) stops it long before this.
constexpr size_t kMaxOpenMarks = 1024;
// Tensor paths are not followed past this length (real ones are under 200
// bytes): nesting dicts under one long key (written once, then fetched
// from the memo at every level) would otherwise make the paths alone take
// gigabytes, and every storage copies its path as its name. A storage
// reached only through a longer path is left out: its member stays opaque.
constexpr size_t kMaxPathBytes = 1024;
// Module and class names of a global together ("torch FloatStorage").
constexpr size_t kMaxGlobalBytes = 1024;

// Values live in the machine's arena and refer to each other by plain
// pointers: a hostile pickle can make a list contain itself, which
// reference counting would leak.
struct Value;
using Ref = Value*;

struct Value {
  enum class Kind { kNone, kInt, kFloat, kString, kGlobal, kTuple, kList, kDict, kPersid, kReduce, kOther };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  std::string s;                          // string, or "module name" of a global
  std::vector<Ref> items;                 // tuple, list; reduce: {func, args}; persid: {pid}
  std::vector<std::pair<Ref, Ref>> dict;  // dict entries in order
};

class Machine {
 public:
  Machine(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}

  // The result belongs to the machine and lives as long as it.
  Result<Ref> Run();

 private:
  Ref Make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }
  Status Need(size_t n) const {
    return static_cast<size_t>(end_ - p_) >= n ? OkStatus() : Corruption("pickle ends inside an opcode");
  }
  Result<Ref> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      return Corruption("pickle stack underflow");
    Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Result<std::vector<Ref>> PopToMark() {
    if (marks_.empty()) return Corruption("pickle has no mark to pop to");
    std::vector<Ref> items(stack_.begin() + static_cast<ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Status Mark() {
    if (marks_.size() >= kMaxOpenMarks) {
      return Corruption("pickle opens more than " + std::to_string(kMaxOpenMarks) + " marks");
    }
    marks_.push_back(stack_.size());
    return OkStatus();
  }
  Status Push(Ref v) {
    if (++count_ > kMaxValues) return Corruption("pickle has too many values");
    stack_.push_back(v);
    return OkStatus();
  }
  Result<std::string> Text(size_t n) {
    ZIPNN_RETURN_IF_ERROR(Need(n));
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  Result<std::string> Line() {
    const uint8_t* nl = p_;
    while (nl < end_ && *nl != '\n') ++nl;
    if (nl == end_) return Corruption("pickle line has no end");
    std::string s(reinterpret_cast<const char*>(p_), static_cast<size_t>(nl - p_));
    p_ = nl + 1;
    return s;
  }
  Status Memo(uint32_t index) {
    if (stack_.empty()) return Corruption("pickle memoizes an empty stack");
    // MEMOIZE adds an entry for one byte of input: entries count against
    // the same budget as values.
    if (memo_.size() >= kMaxValues && memo_.count(index) == 0) return Corruption("pickle memoizes too many values");
    memo_[index] = stack_.back();
    return OkStatus();
  }
  Result<Ref> Get(uint32_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Corruption("pickle reads memo " + std::to_string(index) + " before writing it");
    return it->second;
  }
  // "module name". STACK_GLOBAL can name one long string from the memo
  // again and again for a few bytes each, so the length is capped.
  Result<Ref> Global(const std::string& module, const std::string& name) {
    if (module.size() + name.size() > kMaxGlobalBytes) {
      return Corruption("pickle names a global longer than " + std::to_string(kMaxGlobalBytes) + " bytes");
    }
    Ref v = Make(Value::Kind::kGlobal);
    v->s = module + " " + name;
    return v;
  }
  Status SetItems(Ref target, const std::vector<Ref>& kv) {
    if (kv.size() % 2 != 0) return Corruption("pickle sets an odd number of dict items");
    if (target->kind != Value::Kind::kDict) return OkStatus();  // objects we do not model
    for (size_t i = 0; i < kv.size(); i += 2) target->dict.emplace_back(kv[i], kv[i + 1]);
    return OkStatus();
  }

  const uint8_t* p_;
  const uint8_t* end_;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Ref> memo_;
  size_t count_ = 0;
};

Result<Ref> Machine::Run() {
  using K = Value::Kind;
  while (p_ < end_) {
    const uint8_t op = *p_++;
    switch (op) {
      case 0x80:
        ZIPNN_RETURN_IF_ERROR(Need(1));
        ++p_;
        break;  // PROTO
      case 0x95:
        ZIPNN_RETURN_IF_ERROR(Need(8));
        p_ += 8;
        break;     // FRAME
      case '.': {  // STOP
        ZIPNN_ASSIGN_OR_RETURN(Ref top, Pop());
        return top;
      }
      case '(':
        ZIPNN_RETURN_IF_ERROR(Mark());
        break;  // MARK
      case 'N':
        ZIPNN_RETURN_IF_ERROR(Push(Make(K::kNone)));
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Ref v = Make(K::kInt);
        v->i = op == 0x88;
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'K':
      case 'M':
      case 'J': {  // BININT1, BININT2, BININT
        const size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
        ZIPNN_RETURN_IF_ERROR(Need(n));
        Ref v = Make(K::kInt);
        v->i = n == 1 ? *p_ : n == 2 ? LoadLE<uint16_t>(p_) : static_cast<int32_t>(LoadLE<uint32_t>(p_));
        p_ += n;
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 0x8a: {  // LONG1
        ZIPNN_RETURN_IF_ERROR(Need(1));
        const size_t n = *p_++;
        ZIPNN_RETURN_IF_ERROR(Need(n));
        Ref v = Make(K::kInt);
        for (size_t k = 0; k < n && k < 8; ++k) v->i |= static_cast<int64_t>(p_[k]) << (8 * k);
        p_ += n;
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'G':
        ZIPNN_RETURN_IF_ERROR(Need(8));
        p_ += 8;
        ZIPNN_RETURN_IF_ERROR(Push(Make(K::kFloat)));
        break;  // BINFLOAT
      case 'X':
      case 0x8c:
      case 'B':
      case 'C':
      case 'T':
      case 'U':
      case 0x8d:
      case 0x8e: {
        // BINUNICODE, SHORT_BINUNICODE, BINBYTES, SHORT_BINBYTES,
        // BINSTRING, SHORT_BINSTRING, BINUNICODE8, BINBYTES8
        const size_t width = (op == 0x8c || op == 'C' || op == 'U') ? 1 : (op == 0x8d || op == 0x8e) ? 8 : 4;
        ZIPNN_RETURN_IF_ERROR(Need(width));
        const uint64_t n = width == 1 ? *p_ : width == 4 ? LoadLE<uint32_t>(p_) : LoadLE<uint64_t>(p_);
        p_ += width;
        if (n > static_cast<uint64_t>(end_ - p_)) return Corruption("pickle string runs past the end");
        Ref v = Make(K::kString);
        ZIPNN_ASSIGN_OR_RETURN(v->s, Text(static_cast<size_t>(n)));
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'c': {  // GLOBAL
        ZIPNN_ASSIGN_OR_RETURN(std::string module, Line());
        ZIPNN_ASSIGN_OR_RETURN(std::string name, Line());
        ZIPNN_ASSIGN_OR_RETURN(Ref v, Global(module, name));
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        ZIPNN_ASSIGN_OR_RETURN(Ref name, Pop());
        ZIPNN_ASSIGN_OR_RETURN(Ref module, Pop());
        if (module->kind != K::kString || name->kind != K::kString) {
          return Corruption("pickle STACK_GLOBAL takes two strings");
        }
        ZIPNN_ASSIGN_OR_RETURN(Ref v, Global(module->s, name->s));
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case ')':
        ZIPNN_RETURN_IF_ERROR(Push(Make(K::kTuple)));
        break;  // EMPTY_TUPLE
      case ']':
        ZIPNN_RETURN_IF_ERROR(Push(Make(K::kList)));
        break;  // EMPTY_LIST
      case '}':
        ZIPNN_RETURN_IF_ERROR(Push(Make(K::kDict)));
        break;     // EMPTY_DICT
      case 't': {  // TUPLE
        Ref v = Make(K::kTuple);
        ZIPNN_ASSIGN_OR_RETURN(v->items, PopToMark());
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        Ref v = Make(K::kTuple);
        v->items.resize(op - 0x84);
        for (size_t k = v->items.size(); k > 0; --k) {
          ZIPNN_ASSIGN_OR_RETURN(v->items[k - 1], Pop());
        }
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'l': {  // LIST
        Ref v = Make(K::kList);
        ZIPNN_ASSIGN_OR_RETURN(v->items, PopToMark());
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'a': {  // APPEND
        ZIPNN_ASSIGN_OR_RETURN(Ref item, Pop());
        if (stack_.empty()) return Corruption("pickle appends to nothing");
        if (stack_.back()->kind == K::kList) stack_.back()->items.push_back(item);
        break;
      }
      case 'e': {  // APPENDS
        ZIPNN_ASSIGN_OR_RETURN(std::vector<Ref> items, PopToMark());
        if (stack_.empty()) return Corruption("pickle appends to nothing");
        if (stack_.back()->kind == K::kList) {
          for (Ref& item : items) stack_.back()->items.push_back(item);
        }
        break;
      }
      case 's': {  // SETITEM
        ZIPNN_ASSIGN_OR_RETURN(Ref value, Pop());
        ZIPNN_ASSIGN_OR_RETURN(Ref key, Pop());
        if (stack_.empty()) return Corruption("pickle sets an item on nothing");
        ZIPNN_RETURN_IF_ERROR(SetItems(stack_.back(), {key, value}));
        break;
      }
      case 'u': {  // SETITEMS
        ZIPNN_ASSIGN_OR_RETURN(std::vector<Ref> kv, PopToMark());
        if (stack_.empty()) return Corruption("pickle sets items on nothing");
        ZIPNN_RETURN_IF_ERROR(SetItems(stack_.back(), kv));
        break;
      }
      case 'q':
        ZIPNN_RETURN_IF_ERROR(Need(1));
        ZIPNN_RETURN_IF_ERROR(Memo(*p_++));
        break;  // BINPUT
      case 'r':
        ZIPNN_RETURN_IF_ERROR(Need(4));
        ZIPNN_RETURN_IF_ERROR(Memo(LoadLE<uint32_t>(p_)));
        p_ += 4;
        break;  // LONG_BINPUT
      case 0x94:
        ZIPNN_RETURN_IF_ERROR(Memo(static_cast<uint32_t>(memo_.size())));
        break;     // MEMOIZE
      case 'h': {  // BINGET
        ZIPNN_RETURN_IF_ERROR(Need(1));
        ZIPNN_ASSIGN_OR_RETURN(Ref v, Get(*p_++));
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'j': {  // LONG_BINGET
        ZIPNN_RETURN_IF_ERROR(Need(4));
        ZIPNN_ASSIGN_OR_RETURN(Ref v, Get(LoadLE<uint32_t>(p_)));
        p_ += 4;
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'Q': {  // BINPERSID
        ZIPNN_ASSIGN_OR_RETURN(Ref pid, Pop());
        Ref v = Make(K::kPersid);
        v->items.push_back(pid);
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'R':
      case 0x81: {  // REDUCE, NEWOBJ
        ZIPNN_ASSIGN_OR_RETURN(Ref args, Pop());
        ZIPNN_ASSIGN_OR_RETURN(Ref func, Pop());
        // An OrderedDict is built empty and filled by SETITEMS.
        if (func->kind == K::kGlobal && func->s == "collections OrderedDict") {
          ZIPNN_RETURN_IF_ERROR(Push(Make(K::kDict)));
          break;
        }
        Ref v = Make(K::kReduce);
        v->items = {func, args};
        ZIPNN_RETURN_IF_ERROR(Push(v));
        break;
      }
      case 'b': {  // BUILD: state is not needed
        ZIPNN_ASSIGN_OR_RETURN(Ref state, Pop());
        (void)state;
        if (stack_.empty()) return Corruption("pickle builds nothing");
        break;
      }
      case '0': {
        ZIPNN_ASSIGN_OR_RETURN(Ref dropped, Pop());
        (void)dropped;
        break;
      }  // POP
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        return Unsupported(std::string("pickle opcode ") + hex + " is not supported");
      }
    }
  }
  return Corruption("pickle has no STOP");
}

// Walks the unpickled structure in order; the first tensor path that
// reaches a storage names it. Shared values are visited once.
class Walker {
 public:
  void Walk(const Ref& v, const std::string& path, size_t depth) {
    if (depth > kMaxDepth) return;
    using K = Value::Kind;
    // A tensor reached again (one object saved under two names) is a view
    // under each; anything else shared is walked once.
    if (!seen_.insert(v).second && !IsRebuild(v)) return;
    switch (v->kind) {
      case K::kDict:
        for (const auto& [key, value] : v->dict) {
          if (key->kind == K::kString) {
            Child(value, path, key->s, depth);
          } else {
            Child(value, path, key->kind == K::kInt ? std::to_string(key->i) : "?", depth);
          }
        }
        break;
      case K::kList:
      case K::kTuple:
        for (size_t i = 0; i < v->items.size(); ++i) Child(v->items[i], path, std::to_string(i), depth);
        break;
      case K::kReduce: {
        const Ref& args = v->items[1];
        // _rebuild_tensor_v2(storage, offset, size, stride, ...).
        if (IsRebuild(v)) {
          if (TorchStorage* s = Storage(args->items[0], path)) View(*s, args->items, path);
          break;
        }
        Walk(args, path, depth + 1);  // nn.Parameter wraps a tensor: same path
        break;
      }
      case K::kPersid:
        Storage(v, path);
        break;
      default:
        break;
    }
  }
  std::vector<TorchStorage> Take() { return std::move(storages_); }

 private:
  // _rebuild_tensor_v2 and its relatives: a reduce whose first argument is
  // a storage's persistent id.
  static bool IsRebuild(const Ref& v) {
    if (v->kind != Value::Kind::kReduce) return false;
    const Ref& args = v->items[1];
    return args->kind == Value::Kind::kTuple && !args->items.empty() && args->items[0]->kind == Value::Kind::kPersid;
  }

  // Walks `v` under path/part, unless that path would be too long; the
  // length is checked before the path is built.
  void Child(const Ref& v, const std::string& path, std::string_view part, size_t depth) {
    if (path.size() + 1 + part.size() > kMaxPathBytes) return;
    Walk(v, path.empty() ? std::string(part) : path + "/" + std::string(part), depth + 1);
  }
  // ('storage', <class>, key, location, numel): the storage, recorded the
  // first time a tensor reaches it.
  TorchStorage* Storage(const Ref& persid, const std::string& path) {
    const Ref& pid = persid->items[0];
    if (pid->kind != Value::Kind::kTuple || pid->items.size() < 3) return nullptr;
    const Ref& cls = pid->items[1];
    const Ref& key = pid->items[2];
    if (key->kind != Value::Kind::kString) return nullptr;
    auto known = known_.find(key->s);
    if (known != known_.end()) return &storages_[known->second];
    known_[key->s] = storages_.size();
    TorchStorage s;
    s.key = key->s;
    s.name = path;
    if (cls->kind == Value::Kind::kGlobal) {
      const size_t space = cls->s.find(' ');
      s.dtype = TorchStorageDType(space == std::string::npos ? cls->s : cls->s.substr(space + 1));
    }
    storages_.push_back(std::move(s));
    return &storages_.back();
  }

  // The tuple of non-negative ints `v`, if it is one of at most
  // kMaxTorchDims.
  static std::optional<std::vector<uint64_t>> Dims(const Ref& v) {
    if (v->kind != Value::Kind::kTuple || v->items.size() > kMaxTorchDims) return std::nullopt;
    std::vector<uint64_t> dims;
    for (const Ref& d : v->items) {
      if (d->kind != Value::Kind::kInt || d->i < 0) return std::nullopt;
      dims.push_back(static_cast<uint64_t>(d->i));
    }
    return dims;
  }

  // The view (storage, offset, size, stride, ...) describes, when its
  // arguments are what torch writes.
  void View(TorchStorage& storage, const std::vector<Ref>& args, const std::string& path) {
    if (views_ >= kMaxTorchViews || args.size() < 4 || args[1]->kind != Value::Kind::kInt || args[1]->i < 0) return;
    auto shape = Dims(args[2]);
    auto stride = Dims(args[3]);
    if (!shape || !stride || shape->size() != stride->size()) return;
    storage.views.push_back(
        TorchView{path, views_++, static_cast<uint64_t>(args[1]->i), std::move(*shape), std::move(*stride)});
  }

  std::set<const Value*> seen_;
  std::map<std::string, size_t> known_;  // storage key -> index in storages_
  std::vector<TorchStorage> storages_;
  size_t views_ = 0;
};

}  // namespace

std::optional<codec::DType> TorchStorageDType(const std::string& class_name) {
  using codec::DType;
  static const std::map<std::string, DType> kTypes = {
      {"FloatStorage", DType::kF32},
      {"DoubleStorage", DType::kF64},
      {"HalfStorage", DType::kF16},
      {"BFloat16Storage", DType::kBF16},
      {"LongStorage", DType::kI64},
      {"IntStorage", DType::kI32},
      {"ShortStorage", DType::kI16},
      {"CharStorage", DType::kI8},
      {"ByteStorage", DType::kU8},
      {"BoolStorage", DType::kBool},
      // Newer torch may name the dtype itself.
      {"float32", DType::kF32},
      {"float64", DType::kF64},
      {"float16", DType::kF16},
      {"bfloat16", DType::kBF16},
      {"int64", DType::kI64},
      {"int32", DType::kI32},
      {"int16", DType::kI16},
      {"int8", DType::kI8},
      {"uint8", DType::kU8},
      {"bool", DType::kBool},
  };
  auto it = kTypes.find(class_name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

Result<std::vector<TorchStorage>> ReadTorchPickle(const uint8_t* data, size_t size) {
  Machine machine(data, size);
  ZIPNN_ASSIGN_OR_RETURN(Ref top, machine.Run());
  Walker walker;
  walker.Walk(top, "", 0);
  return walker.Take();
}

}  // namespace zipnn::formats
