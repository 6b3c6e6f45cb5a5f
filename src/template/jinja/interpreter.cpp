// Statements: output, if, for, set, macro, call and filter blocks, break and continue.
#include "template/jinja/interpreter.h"

#include <algorithm>

#include "template/jinja/error.h"

namespace ember::jinja {

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < pos.size()) return &pos[index];
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

Value CallArgs::get_or(size_t index, std::string_view name, Value fallback) const {
  const Value* v = get(index, name);
  return v ? *v : std::move(fallback);
}

Interpreter::Interpreter(const Dict& variables, std::optional<std::time_t> now) : now_(now) {
  auto root = std::make_shared<Scope>();
  Dict globals;
  add_globals(globals);
  for (auto& [k, v] : globals.items) (*root)[k] = v;
  for (const auto& [k, v] : variables.items) (*root)[k] = v;
  scopes_.push_back(std::move(root));
}

Interpreter::~Interpreter() {
  for (const Value& ns : namespaces_) ns.entries().items.clear();
}

std::time_t Interpreter::now() const { return now_ ? *now_ : std::time(nullptr); }

void Interpreter::tick() {
  if (++steps_ > kMaxSteps) fail("the template ran more than {} steps", kMaxSteps);
}

Text Interpreter::render(const Body& body) {
  Text out;
  out_ = &out;
  exec(body);
  out_ = nullptr;
  return out;
}

void Interpreter::write(const Text& t) {
  if (out_->bytes.size() + t.bytes.size() > kMaxOutputBytes) fail("the output grew beyond {} bytes", kMaxOutputBytes);
  out_->append(t);
}

Interpreter::Flow Interpreter::exec(const Body& body) {
  for (const NodePtr& n : body) {
    const Flow f = exec(*n);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Node& n) {
  tick();
  line_ = n.line;
  col_ = n.col;
  switch (n.kind) {
    case NodeKind::Text: write(n.literal.text()); return Flow::Normal;
    case NodeKind::Output: write(to_text(eval(*n.kids[0]))); return Flow::Normal;
    case NodeKind::If:
      for (size_t i = 0; i < n.kids.size(); ++i)
        if (eval(*n.kids[i]).truthy()) return exec(n.bodies[i]);
      return exec(n.else_body);
    case NodeKind::For: return exec_for(n);
    case NodeKind::Set: exec_set(n); return Flow::Normal;
    case NodeKind::Macro: define_macro(n); return Flow::Normal;
    case NodeKind::CallBlock: {
      const Node* block = &n;
      const Value caller = Value::callable(
          [block](Interpreter& in, CallArgs& args) { return in.invoke_macro(*block, args, Value()); }, "caller");
      const Node& call = *n.kids[0];
      CallArgs args = eval_args(call);
      args.kw.emplace_back("caller", caller);
      write(to_text(call_node(call, args)));
      return Flow::Normal;
    }
    case NodeKind::FilterBlock: {
      Value v = Value::string(capture(n.body));
      std::vector<const Node*> chain;
      for (const Node* f = n.kids[0].get(); f; f = f->kids[0].get()) chain.insert(chain.begin(), f);
      for (const Node* f : chain) {
        CallArgs args = eval_args(*f);
        v = apply_filter(*this, f->name, v, args);
      }
      write(to_text(v));
      return Flow::Normal;
    }
    case NodeKind::Break: return Flow::Break;
    case NodeKind::Continue: return Flow::Continue;
    default: fail("internal: expression used as a statement");
  }
}

// The loop variable is one dict per loop, updated in place each iteration (previtem and
// nextitem are Undefined where Python has none), so an iteration costs no allocation.
Interpreter::Flow Interpreter::exec_for(const Node& n) {
  const Value iterable = eval(*n.kids[0]);
  Array copied;
  const Array* all = iterable.is_list() && !n.kids[1] ? &iterable.items() : &(copied = iterate(iterable));
  scopes_.push_back(std::make_shared<Scope>());
  if (n.kids[1]) {  // {% for x in xs if cond %}: the condition filters before the loop counts
    Array kept;
    for (Value& item : copied) {
      tick();
      assign(n.targets, item);
      if (eval(*n.kids[1]).truthy()) kept.push_back(std::move(item));
    }
    copied = std::move(kept);
  }
  const auto count = static_cast<int64_t>(all->size());
  auto index = std::make_shared<int64_t>(0);
  Dict fields;
  for (const char* k : {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0",
                        "previtem", "nextitem"})
    fields.items.emplace_back(k, Value());
  fields.items.emplace_back("cycle", Value::callable(
                                         [index](Interpreter&, CallArgs& args) {
                                           if (args.pos.empty()) fail("loop.cycle needs at least one value");
                                           return args.pos[static_cast<size_t>(*index) % args.pos.size()];
                                         },
                                         "cycle"));
  const Value loop = Value::dict(std::move(fields));
  auto& f = loop.entries().items;
  (*scopes_.back())["loop"] = loop;
  for (int64_t i = 0; i < count; ++i) {
    tick();
    *index = i;
    assign(n.targets, (*all)[static_cast<size_t>(i)]);
    f[0].second = Value::integer(i + 1);
    f[1].second = Value::integer(i);
    f[2].second = Value::integer(count - i);
    f[3].second = Value::integer(count - i - 1);
    f[4].second = Value::boolean(i == 0);
    f[5].second = Value::boolean(i == count - 1);
    f[6].second = Value::integer(count);
    f[7].second = Value::integer(1);
    f[8].second = Value::integer(0);
    f[9].second = i > 0 ? (*all)[static_cast<size_t>(i - 1)] : Value();
    f[10].second = i + 1 < count ? (*all)[static_cast<size_t>(i + 1)] : Value();
    if (exec(n.body) == Flow::Break) break;
  }
  scopes_.pop_back();
  if (count == 0) return exec(n.else_body);
  return Flow::Normal;
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& v) {
  Scope& scope = *scopes_.back();
  if (targets.size() == 1) {
    scope[targets[0]] = v;
    return;
  }
  const Array items = iterate(v);
  if (items.size() != targets.size())
    fail("cannot unpack {} values into {} names", items.size(), targets.size());
  for (size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = items[i];
}

void Interpreter::exec_set(const Node& n) {
  Value v = n.kids.empty() ? Value::string(capture(n.body)) : eval(*n.kids[0]);
  if (n.attr.empty()) {
    assign(n.targets, v);
    return;
  }
  const Value target = lookup(n.targets[0]);
  if (target.kind() != Value::Kind::Namespace) fail("cannot assign attribute on non-namespace object");
  target.entries().set(n.attr, std::move(v));
}

Text Interpreter::capture(const Body& body) {
  Text buf;
  Text* saved = out_;
  out_ = &buf;
  exec(body);
  out_ = saved;
  return buf;
}

void Interpreter::define_macro(const Node& n) {
  const Node* m = &n;
  (*scopes_.back())[n.name] = Value::callable(
      [m](Interpreter& in, CallArgs& args) {
        Value caller;
        for (auto it = args.kw.begin(); it != args.kw.end(); ++it)
          if (it->first == "caller") {
            caller = it->second;
            args.kw.erase(it);
            break;
          }
        return in.invoke_macro(*m, args, caller);
      },
      n.name);
}

// A macro (or a call block's body, as `caller`) runs in a scope of its own above the template's
// top level, with its parameters bound from the arguments or their defaults.
Value Interpreter::invoke_macro(const Node& m, CallArgs& args, const Value& caller) {
  if (++call_depth_ > kMaxCallDepth) fail("macro calls nest deeper than {}", kMaxCallDepth);
  auto scope = std::make_shared<Scope>();
  std::vector<std::shared_ptr<Scope>> saved = {scopes_.front(), scope};
  std::swap(saved, scopes_);
  Array varargs;
  for (size_t i = 0; i < args.pos.size(); ++i)
    if (i >= m.targets.size()) varargs.push_back(args.pos[i]);
  Dict kwargs;
  for (const auto& [k, v] : args.kw)
    if (std::find(m.targets.begin(), m.targets.end(), k) == m.targets.end()) kwargs.set(k, v);
  try {
    for (size_t i = 0; i < m.targets.size(); ++i) {
      const Value* given = args.get(i, m.targets[i]);
      (*scope)[m.targets[i]] = given ? *given : m.args[i] ? eval(*m.args[i]) : Value::undefined(m.targets[i]);
    }
    (*scope)["varargs"] = Value::list(std::move(varargs));
    (*scope)["kwargs"] = Value::dict(std::move(kwargs));
    if (!caller.is_undefined()) (*scope)["caller"] = caller;
    Text body = capture(m.body);
    std::swap(saved, scopes_);
    --call_depth_;
    return Value::string(std::move(body));
  } catch (...) {
    std::swap(saved, scopes_);
    --call_depth_;
    throw;
  }
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    const auto hit = (*it)->find(name);
    if (hit != (*it)->end()) return hit->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (!fn.is_callable()) {
    if (fn.is_undefined()) fail("{}", fn.name().empty() ? "undefined value called" : fn.name());
    fail("'{}' object is not callable", fn.type_name());
  }
  tick();
  return fn.function()(*this, args);
}

}  // namespace ember::jinja
