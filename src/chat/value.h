// The values a chat template computes with: Python's None, bool, int, float, str, list, dict
// (insertion-ordered), plus Jinja's Undefined, namespace objects, loop objects and callables.
// Containers are shared (Python reference semantics); strings remember which of their bytes
// came from the template's own literal text ("trusted"), so the prompt renderer can tell where
// special tokens may be parsed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::chat {

// Byte ranges [first, second) of a string that came from template literals.
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

struct StrData {
  std::string s;
  Ranges trusted;
  bool fully_trusted() const {
    return s.empty() ||
           (trusted.size() == 1 && trusted[0].first == 0 && trusted[0].second == s.size());
  }
};

class Value;
struct ListData;
struct DictData;
struct LoopData;
struct Callable;

class Value {
 public:
  enum class Type : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,      // also tuples and (lazy-in-Python) generators, see ListData
    Dict,      // also namespace() objects, see DictData
    Loop,      // the `loop` variable of a for block
    Callable,  // macros, globals, bound methods
  };

  Value() = default;  // Undefined
  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s, bool trusted = false);
  static Value string(std::shared_ptr<const StrData> s);
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value generator(std::vector<Value> items);
  static Value dict();
  static Value name_space();
  static Value loop(std::shared_ptr<LoopData> l);
  static Value callable(std::shared_ptr<Callable> c);
  static Value from_json(const nlohmann::ordered_json& j, bool trusted_strings = false);

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::Undefined; }
  bool is_none() const { return type_ == Type::None; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_int() const { return type_ == Type::Int; }
  bool is_float() const { return type_ == Type::Float; }
  bool is_number() const {
    return type_ == Type::Int || type_ == Type::Float || type_ == Type::Bool;
  }
  bool is_string() const { return type_ == Type::String; }
  bool is_list() const { return type_ == Type::List; }
  bool is_dict() const { return type_ == Type::Dict; }
  bool is_callable() const { return type_ == Type::Callable; }
  bool is_loop() const { return type_ == Type::Loop; }

  bool as_bool() const { return u_.b; }
  int64_t as_int() const { return type_ == Type::Bool ? (u_.b ? 1 : 0) : u_.i; }
  double as_float() const { return type_ == Type::Float ? u_.d : static_cast<double>(as_int()); }
  const std::string& str() const { return static_cast<const StrData*>(ptr_.get())->s; }
  std::shared_ptr<const StrData> str_data() const {
    return std::static_pointer_cast<const StrData>(ptr_);
  }
  const StrData& str_ref() const { return *static_cast<const StrData*>(ptr_.get()); }
  ListData& list_data() const { return *static_cast<ListData*>(ptr_.get()); }
  DictData& dict_data() const { return *static_cast<DictData*>(ptr_.get()); }
  LoopData& loop_data() const { return *static_cast<LoopData*>(ptr_.get()); }
  Callable& callable_data() const { return *static_cast<Callable*>(ptr_.get()); }
  // For Undefined: the name that was looked up (for error messages), or "".
  std::string undefined_name() const;

  bool truthy() const;
  // Python str(): what `{{ value }}` prints.
  std::string to_str() const;
  // Python repr(): how values print inside containers.
  std::string repr() const;
  // Python type name, for error messages ("NoneType", "str", ...).
  std::string type_name() const;
  nlohmann::ordered_json to_json() const;  // throws hearth::Error for non-JSON values

 private:
  Type type_ = Type::Undefined;
  union {
    bool b;
    int64_t i;
    double d;
  } u_{.i = 0};
  std::shared_ptr<void> ptr_;  // StrData (String; the name for Undefined), ListData, ...
};

// Containers nest at most this deep (bounded recursion when printing, comparing, freeing).
inline constexpr uint32_t kMaxNesting = 512;
// 0 for scalars; 1 + the deepest item for containers.
uint32_t nesting_depth(const Value& v);

struct ListData {
  std::vector<Value> items;
  uint32_t depth = 1;
  bool is_tuple = false;
  bool is_generator = false;  // map/select/... results: no len(), no indexing, not JSON
  // A named tuple (groupby's (grouper, list)) names its items for attribute access; the names
  // are static strings.
  std::span<const std::string_view> field_names;
  const Value* field(std::string_view name) const;
};

// Insertion-ordered; small dicts dominate, so lookups scan. Keys are Python's hashable
// values (None, bool, int, float, str, tuples of them, Undefined) and match as Python's do:
// 1, 1.0 and True are one key, 1 and "1" two. JSON objects bring str keys; dict literals
// may bring others ({0: 0, 512: 128}).
struct DictData {
  std::vector<std::pair<Value, Value>> items;
  uint32_t depth = 1;
  bool is_namespace = false;
  // A str key.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Any key (an unhashable one is simply not found).
  const Value* find(const Value& key) const;
  // Replaces the value of an equal key (keeping the key first inserted, as Python) or appends.
  // Throws hearth::Error for an unhashable key and beyond kMaxNesting.
  void set(std::string key, Value v);
  void set(Value key, Value v);
};

// Whether Python could use `v` as a dict key.
bool is_hashable(const Value& v);

class Interpreter;
struct CallArgs;

struct LoopData {
  std::vector<Value> items;
  size_t index0 = 0;
  size_t depth0 = 0;
  // Set for `{% for ... recursive %}`: calling the loop renders its body for other items, one
  // level deeper.
  std::function<Value(Interpreter&, CallArgs&)> recurse;
  Value get(std::string_view attr) const;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kw(std::string_view name) const;
};

struct Callable {
  std::string name;
  Value bound_self;  // a bound method's object (visible to cycle checks)
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

// Whether `v` holds (directly or nested) the container `target` (before making ns.attr = v).
bool reaches(const Value& v, const DictData* target, int depth = 0);

// Python equality (1 == 1.0 == True, element-wise containers, Undefined == Undefined).
bool py_equal(const Value& a, const Value& b, int depth = 0);
// Python repr of a float (shortest round trip: 1.0, 0.5, 1e-05).
std::string py_float_repr(double d);

// Code points of a UTF-8 string (Python's len()); invalid bytes count one each.
size_t utf8_length(std::string_view s);
// Byte offsets of each code point start, plus s.size() at the end.
std::vector<uint32_t> utf8_offsets(std::string_view s);

}  // namespace hearth::chat
