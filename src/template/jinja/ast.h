// The parsed template: one node type for expressions and statements, told apart by kind, with
// the template position each came from (for error lines).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "template/jinja/value.h"

namespace ember::jinja {

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind {
  // expressions
  Literal,    // literal
  Name,       // name
  Attr,       // kids[0].name
  Item,       // kids[0][kids[1]]
  Slice,      // kids[0][kids[1]:kids[2]:kids[3]] (null kids = omitted)
  Call,       // kids[0](args)
  Filter,     // kids[0] | name(args); kids[0] null inside {% filter %}
  Test,       // kids[0] is [not] name(args); negated
  Unary,      // name ("-", "+", "not") kids[0]
  Binary,     // kids[0] name kids[1]: arithmetic, ~, comparisons, in, and, or
  Cond,       // kids[0] if kids[1] else kids[2] (kids[2] null: undefined)
  ListLit,    // [kids...]  (also tuples)
  DictLit,    // {kids[0]: kids[1], ...}
  // statements
  Text,       // literal text
  Output,     // {{ kids[0] }}
  If,         // kids = conditions, bodies[i] their bodies, else_body
  For,        // targets in kids[0] [if kids[1]]: body, else_body
  Set,        // targets (or name.attr when attr non-empty) = kids[0]; or a block: body
  Macro,      // macro name(targets = kids defaults); body
  CallBlock,  // {% call(targets) kids[0] %} body
  FilterBlock,  // {% filter kids[0] %} body
  Break,
  Continue,
};

// Arguments of a call, filter or test: kids with their keyword names ("" = positional).
struct Node {
  NodeKind kind;
  int line = 0;
  int col = 0;
  std::string name;
  std::string attr;
  bool negated = false;
  Value literal;
  std::vector<NodePtr> kids;
  std::vector<NodePtr> args;
  std::vector<std::string> arg_names;
  std::vector<std::string> targets;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
};

// Throws Failure "line L:C: ..." for a syntax error.
Body parse_template(std::string_view source);

}  // namespace ember::jinja
