// Expressions: names, literals, lookups, calls, filters, tests and operators.
#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"

namespace ember::jinja {

Value Interpreter::eval(const Node& n) {
  tick();
  switch (n.kind) {
    case NodeKind::Literal: return n.literal;
    case NodeKind::Name: return lookup(n.name);
    case NodeKind::Attr: return get_attr(eval(*n.kids[0]), n.name);
    case NodeKind::Item: return get_item(eval(*n.kids[0]), eval(*n.kids[1]));
    case NodeKind::Slice: {
      const Value obj = eval(*n.kids[0]);
      auto part = [&](size_t i) { return n.kids[i] ? eval(*n.kids[i]) : Value::none(); };
      return get_slice(obj, part(1), part(2), part(3));
    }
    case NodeKind::Call: return eval_call(n);
    case NodeKind::Filter: {
      const Value input = eval(*n.kids[0]);
      CallArgs args = eval_args(n);
      line_ = n.line;
      col_ = n.col;
      return apply_filter(*this, n.name, input, args);
    }
    case NodeKind::Test: {
      const Value input = eval(*n.kids[0]);
      CallArgs args = eval_args(n);
      line_ = n.line;
      col_ = n.col;
      return Value::boolean(apply_test(*this, n.name, input, args) != n.negated);
    }
    case NodeKind::Unary: {
      const Value v = eval(*n.kids[0]);
      if (n.name == "not") return Value::boolean(!v.truthy());
      if (!v.is_number()) fail("bad operand type for unary {}: '{}'", n.name, v.type_name());
      if (n.name == "+") return v.kind() == Value::Kind::Bool ? Value::integer(v.as_int()) : v;
      return v.kind() == Value::Kind::Float ? Value::number(-v.as_double()) : Value::integer(-v.as_int());
    }
    case NodeKind::Binary: return eval_binary(n);
    case NodeKind::Cond:
      if (eval(*n.kids[1]).truthy()) return eval(*n.kids[0]);
      return n.kids[2] ? eval(*n.kids[2]) : Value::undefined("the condition was false and there is no else");
    case NodeKind::ListLit: {
      Array items;
      for (const NodePtr& k : n.kids) items.push_back(eval(*k));
      return n.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case NodeKind::DictLit: {
      Dict d;
      for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        const Value key = eval(*n.kids[i]);
        d.set(Dict::stored_key(key), eval(*n.kids[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    default: fail("internal: statement used as an expression");
  }
}

CallArgs Interpreter::eval_args(const Node& n) {
  CallArgs args;
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (n.arg_names[i].empty()) args.pos.push_back(eval(*n.args[i]));
    else args.kw.emplace_back(n.arg_names[i], eval(*n.args[i]));
  }
  return args;
}

Value Interpreter::eval_call(const Node& n) {
  CallArgs args = eval_args(n);
  return call_node(n, args);
}

// obj.method(...) on a str, list or dict is Python's method; anything else is looked up and
// must be callable (a macro, a builtin, a namespace member holding one).
Value Interpreter::call_node(const Node& n, CallArgs& args) {
  const Node& callee = *n.kids[0];
  if (callee.kind == NodeKind::Attr) {
    const Value obj = eval(*callee.kids[0]);
    line_ = n.line;
    col_ = n.col;
    Value result;
    if (call_method(*this, obj, callee.name, args, &result)) return result;
    return call(get_attr(obj, callee.name), args);
  }
  const Value fn = eval(callee);
  line_ = n.line;
  col_ = n.col;
  return call(fn, args);
}

Value Interpreter::eval_binary(const Node& n) {
  const Value a = eval(*n.kids[0]);
  if (n.name == "and") return a.truthy() ? eval(*n.kids[1]) : a;
  if (n.name == "or") return a.truthy() ? a : eval(*n.kids[1]);
  const Value b = eval(*n.kids[1]);
  line_ = n.line;
  col_ = n.col;
  return binary_op(n.name, a, b);
}

}  // namespace ember::jinja
