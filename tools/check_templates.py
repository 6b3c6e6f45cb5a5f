"""Renders chat templates with Python's jinja2, set up as transformers sets it up, and with
`ember template`, over a set of conversations, and compares the two byte for byte.

Where jinja2 raises (a template that refuses tools, a role it does not know ...), ember must
fail too. Usage (tools/check-templates wraps it in a venv with jinja2 and gguf):

  check_templates.py EMBER VOCAB_GGUF [--models M.gguf ...] [--only NAME] [--show-diff] TEMPLATE_DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = 1767268800  # 2026-01-01 12:00:00 UTC: what strftime_now() sees on both sides


class AssistantTracker(Extension):
    """transformers' {% generation %} tag: renders its body unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def transformers_env():
    """transformers.utils.chat_template_utils._compile_jinja_template, 4.57."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.fromtimestamp(FIXED_NOW).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def call(i, name, args, as_string):
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}


def conversations():
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    yield "system", {"messages": [sys_msg, {"role": "user", "content": "Hello!"}], "add_generation_prompt": True}
    yield "turns", {"messages": [
        {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6."},
        {"role": "user", "content": "Thanks."}], "add_generation_prompt": True}
    yield "no-gen", {"messages": [sys_msg, {"role": "user", "content": "Hi"},
                                  {"role": "assistant", "content": "Hello, how can I help?"}],
                     "add_generation_prompt": False}
    yield "tools", {"messages": [sys_msg, {"role": "user", "content": "Weather in Paris?"}],
                    "tools": [WEATHER, TIME], "add_generation_prompt": True}
    yield "tool-call-null", {"messages": [
        sys_msg, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call(1, "get_weather", {"city": "Paris"}, False)]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18C, sunny"}],
        "tools": [WEATHER], "add_generation_prompt": True}
    yield "tool-call-empty-str-args", {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", {"city": "Paris"}, True)]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "assistant", "content": "It is 18C in Paris."},
        {"role": "user", "content": "Thanks"}], "tools": [WEATHER], "add_generation_prompt": True}
    yield "parallel", {"messages": [
        sys_msg, {"role": "user", "content": "Weather and time in Oslo and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            call(1, "get_weather", {"city": "Oslo", "unit": "c"}, False), call(2, "get_time", {"city": "Rome"}, False)]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "3C"},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "14:05"}],
        "tools": [WEATHER, TIME], "add_generation_prompt": True}
    for on in (True, False):
        yield f"thinking-{'on' if on else 'off'}", {"messages": [
            {"role": "user", "content": "Is 17 prime?"},
            {"role": "assistant", "content": "Yes.", "reasoning_content": "17 has no divisors but 1 and 17."},
            {"role": "user", "content": "And 21?"}],
            "add_generation_prompt": True, "chat_template_kwargs": {"enable_thinking": on}}
    yield "non-ascii", {"messages": [
        {"role": "system", "content": "Réponds en français. «Soyez bref»"},
        {"role": "user", "content": "Grüße! 你好，世界 🌍 — ça va? <|im_start|> \"quoted\" & 'single'"},
        {"role": "assistant", "content": "Très bien ✓"}, {"role": "user", "content": "Ελληνικά; ok"}],
        "add_generation_prompt": True}


def render_python(env, source, conv, bos, eos):
    kwargs = {"bos_token": bos, "eos_token": eos, **conv.get("chat_template_kwargs", {})}
    try:
        template = env.from_string(source)
        return template.render(messages=conv["messages"], tools=conv.get("tools"), documents=None,
                               add_generation_prompt=conv.get("add_generation_prompt", False), **kwargs), None
    except Exception as e:  # jinja2 and the template's own raise_exception
        return None, f"{type(e).__name__}: {e}"


def render_ember(ember, vocab, template_path, conv_path):
    p = subprocess.run([ember, "template", "-m", vocab, "--chat-template-file", str(template_path),
                        "-f", conv_path, "--now", str(FIXED_NOW)], capture_output=True)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace").strip()
    return p.stdout.decode("utf-8"), None


def first_diff(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"at char {i}: jinja2 {a[max(0, i - 40):i + 60]!r}\n      ember  {b[max(0, i - 40):i + 60]!r}"


def templates_from_models(models, out_dir):
    from gguf import GGUFReader
    found = []
    for m in models:
        reader = GGUFReader(m)
        field = reader.fields.get("tokenizer.chat_template")
        if field is None:
            print(f"{Path(m).name}: no tokenizer.chat_template")
            continue
        text = bytes(field.parts[field.data[0]]).decode("utf-8")
        path = Path(out_dir) / (Path(m).stem + ".jinja")
        path.write_text(text, encoding="utf-8", newline="")
        found.append(path)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ember")
    ap.add_argument("vocab", help="GGUF whose BOS/EOS texts both sides pass as bos_token/eos_token")
    ap.add_argument("template_dir")
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--only")
    ap.add_argument("--show-diff", action="store_true")
    args = ap.parse_args()

    from gguf import GGUFReader
    reader = GGUFReader(args.vocab)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    def token_text(key):
        f = reader.fields.get(key)
        if f is None:
            return ""
        tid = int(f.parts[f.data[0]][0])
        return bytes(tokens.parts[tokens.data[tid]]).decode("utf-8")
    bos, eos = token_text("tokenizer.ggml.bos_token_id"), token_text("tokenizer.ggml.eos_token_id")

    env = transformers_env()
    tmp = tempfile.mkdtemp(prefix="check-templates-")
    paths = sorted(Path(args.template_dir).glob("*.jinja")) + templates_from_models(args.models, tmp)
    if args.only:
        paths = [p for p in paths if args.only in p.name]
    convs = list(conversations())
    conv_files = {}
    for name, conv in convs:
        path = os.path.join(tmp, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(conv, f, ensure_ascii=False)
        conv_files[name] = path

    failing = {}
    n_equal = n_both_raise = 0
    for tpath in paths:
        source = tpath.read_text(encoding="utf-8")
        problems = []
        for name, conv in convs:
            want, want_err = render_python(env, source, conv, bos, eos)
            got, got_err = render_ember(args.ember, args.vocab, tpath, conv_files[name])
            if want_err and got_err:
                n_both_raise += 1
            elif want_err:
                problems.append(f"{name}: jinja2 raised ({want_err[:150]}) but ember rendered")
            elif got_err:
                problems.append(f"{name}: ember failed: {got_err[:300]}")
            elif want != got:
                problems.append(f"{name}: outputs differ " + (first_diff(want, got) if args.show_diff else ""))
            else:
                n_equal += 1
        status = "ok" if not problems else f"FAIL ({len(problems)}/{len(convs)})"
        print(f"{status:14} {tpath.name}")
        for p in problems:
            print("    " + p)
        if problems:
            failing[tpath.name] = problems
    total = len(paths)
    print(f"\n{total - len(failing)}/{total} templates byte-equal with jinja2 on all {len(convs)} conversations "
          f"({n_equal} renders equal, {n_both_raise} raised on both sides)")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
