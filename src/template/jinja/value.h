// The values a Jinja template computes with, with Python's meaning (jinja2 evaluates templates
// as Python expressions): None, bools, ints, floats, str, list, dict, jinja2's Undefined,
// namespace() objects and callables (macros, builtins, bound methods).
//
// Lists, dicts and namespaces are shared by reference, as in Python. Every string carries the
// byte ranges that came from the caller's data (messages, tools, kwargs) rather than from the
// template text: the renderer keeps those ranges through concatenation and slicing, so the
// tokenizer can refuse to read control tokens inside what a user wrote.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/json.h"

namespace ember::jinja {

// [begin, end) bytes of a string that came from data.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
};

// A string and the parts of it that came from data (sorted, disjoint, non-empty).
struct Text {
  std::string bytes;
  std::vector<Span> data;

  void append(const Text& other);
  void append(std::string_view template_bytes) { bytes += template_bytes; }
  // bytes[begin, end) with the data ranges that fall inside it.
  Text substr(size_t begin, size_t end) const;
  bool has_data() const { return !data.empty(); }
  static Text from_data(std::string s);
};

// Bytes computed from `src` (case-mapped, replaced, indented ...): all data when src held any.
Text derived_text(const Text& src, std::string bytes);

class Value;
struct CallArgs;
class Interpreter;
using Array = std::vector<Value>;
// A dict keeps its insertion order, as Python's does. Keys are strings (JSON and template
// literals only make string keys; an int key is refused when the dict is built).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool data_keys = false;  // the keys came from data (a parsed JSON object)
  // Keys are stored as strings; a key that is not a str (Python allows ints too) is stored
  // encoded, and key_value() gives back what the template sees.
  static std::string stored_key(const Value& key);  // throws for a key of another kind
  Value key_value(const std::string& stored) const;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value v);
};
using Function = std::function<Value(Interpreter&, CallArgs&)>;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // Undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);  // template text
  static Value string(Text t);
  static Value list(Array items = {});
  static Value dict(Dict d = {});
  static Value ns(Dict d = {});
  static Value callable(Function f, std::string name);
  // An undefined value that remembers what was missing, for the error message when it is used.
  static Value undefined(std::string what);
  // JSON data from the caller; every string in it is marked as data.
  static Value from_json(const json::Value& v, size_t depth = 0);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  // What map(), select() and friends return: in Python a generator, which is always true,
  // has no len() and is not JSON; `| list` makes it a list.
  bool is_generator() const { return generator_; }
  static Value generator(Array items);
  // A Python tuple ((a, b), the pairs of items() and dictsort): a list that prints as (a, b).
  bool is_tuple() const { return tuple_; }
  static Value tuple(Array items);
  // markupsafe's Markup, which `| safe` makes: `+` with a plain str HTML-escapes the str (the
  // templates use it for exactly that quirk; `~` and output treat it as a plain string).
  bool is_markup() const { return markup_; }
  static Value markup(Text t);
  bool is_dict() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(f_) : i_; }
  double as_double() const { return kind_ == Kind::Float ? f_ : static_cast<double>(i_); }
  const Text& text() const { return *str_; }
  const std::string& str() const { return str_->bytes; }
  Array& items() const { return *list_; }
  Dict& entries() const { return *dict_; }
  const Function& function() const { return *fn_; }
  const std::string& name() const;  // callable's name, or what is undefined (may be empty)

  bool truthy() const;
  const char* type_name() const;  // Python's: 'str', 'dict', 'NoneType' ...
  bool same_object(const Value& o) const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool generator_ = false;
  bool tuple_ = false;
  bool markup_ = false;
  int64_t i_ = 0;  // Int, and Bool as 0/1 (Python's bool is an int)
  double f_ = 0;
  std::shared_ptr<const Text> str_;
  std::shared_ptr<Array> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> fn_;
  std::shared_ptr<const std::string> name_;
};

// markupsafe.escape: & < > " ' as HTML entities.
Text html_escape(const Text& t);
// Whether any string inside v came from data.
bool holds_data(const Value& v, size_t depth = 0);
// Python's str(v) (what {{ v }} writes; Undefined writes nothing) and repr(v).
Text to_text(const Value& v);
std::string repr(const Value& v);
// Python's ==, and <, for sort, min, max and the comparison operators (throws on mixed types).
bool equal(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);

}  // namespace ember::jinja
