#!/usr/bin/env python3
"""The schemas of tools/check-structured-output and tools/bench-structured-output, with a prompt
and a valid example document each. Run with a folder: writes schema-NAME.json and .doc there."""
import json
import os
import sys

S = lambda n: {"type": "string", "maxLength": n}
SCHEMAS = {
    "person": {"type": "object", "properties": {"name": S(40), "age": {"type": "integer"}, "email": S(60)},
               "required": ["name", "age"]},
    "address": {"type": "object", "properties": {"street": S(60), "city": S(40),
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"]}}, "required": ["street", "city", "zip"]},
    "tags": {"type": "array", "items": S(20), "minItems": 1, "maxItems": 5},
    "color": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
              "shade": {"enum": ["light", "dark", None]}}, "required": ["color", "shade"]},
    "id_or_name": {"type": "object", "properties": {"who": {"anyOf": [{"type": "integer"}, S(30)]}}, "required": ["who"]},
    "order": {"type": "object", "properties": {"id": S(20), "items": {"type": "array", "items": {"$ref": "#/$defs/item"},
              "minItems": 1, "maxItems": 4}}, "required": ["id", "items"],
              "$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
                                                                  "qty": {"type": "integer"}}, "required": ["sku", "qty"]}}},
    "tree": {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
              "label": S(20), "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
              "required": ["label"]}}},
    "event": {"type": "object", "properties": {"title": S(40), "date": {"type": "string", "format": "date"},
              "id": {"type": "string", "format": "uuid"}}, "required": ["title", "date", "id"]},
    "flags": {"type": "object", "properties": {"version": {"const": 2}, "enabled": {"type": "boolean"},
              "note": {"type": ["string", "null"], "maxLength": 30}}, "required": ["version", "enabled", "note"]},
    "scores": {"type": "object", "properties": {"total": {"type": "integer"}},
               "additionalProperties": {"type": "integer"}, "required": ["total"]},
    "shape": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}]},
    "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
               "minItems": 2, "maxItems": 3},
}
PROMPTS = {
    "person": "Describe a person.", "address": "Give an address.", "tags": "Tag a blog post about Rust.",
    "color": "Pick a color.", "id_or_name": "Who wrote Hamlet?", "order": "Make an order for three products.",
    "tree": "Give a small family tree.", "event": "Describe a meeting.", "flags": "Give feature flags.",
    "scores": "Give scores for three players.", "shape": "Describe a shape.", "matrix": "Give a small matrix.",
}


EXAMPLES = {  # one valid document per schema (bench-grammar feeds it token by token)
    "person": {"name": "Ada Lovelace", "age": 36, "email": "ada@example.com"},
    "address": {"street": "1 Main Street", "city": "Springfield", "zip": "12345", "geo": {"lat": 1.5, "lon": -3.25}},
    "tags": ["rust", "memory safety", "systems"],
    "color": {"color": "blue", "shade": None},
    "id_or_name": {"who": "William Shakespeare"},
    "order": {"id": "A-17", "items": [{"sku": "ABC-123", "qty": 2}, {"sku": "XYZ-999", "qty": 1}]},
    "tree": {"label": "root", "children": [{"label": "a"}, {"label": "b", "children": [{"label": "c"}]}]},
    "event": {"title": "Planning", "date": "2024-05-01", "id": "123e4567-e89b-12d3-a456-426614174000"},
    "flags": {"version": 2, "enabled": True, "note": None},
    "scores": {"total": 30, "ann": 10, "bob": 20},
    "shape": {"kind": "circle", "r": 2.5},
    "matrix": [[1, 2], [3, 4, 5]],
}


def main():
    out = sys.argv[1]
    for name, schema in SCHEMAS.items():
        with open(os.path.join(out, f"schema-{name}.json"), "w") as f:
            json.dump(schema, f)
        with open(os.path.join(out, f"schema-{name}.doc"), "w") as f:
            json.dump(EXAMPLES[name], f, indent=2)


if __name__ == "__main__":
    main()
