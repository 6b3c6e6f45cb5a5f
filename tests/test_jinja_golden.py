#!/usr/bin/env python3
"""Writes tests/test_jinja_golden.inc: small templates, their variables, and what Python's
jinja2 renders for them in the environment transformers uses (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception). An independent oracle
for ember's Jinja interpreter; a case jinja2 refuses is expected to fail in ember too.
Run: python3 tests/test_jinja_golden.py > tests/test_jinja_golden.inc   (pip install jinja2==3.1.6)"""
import json

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    return e


MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <b>&'\"</b>"},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1, "y": [1.5, None, True]}}}]},
        {"role": "user", "content": "Grüße 世界 🌍"}]
V = {"messages": MSGS, "name": "  Ada Lovelace  ", "n": 7, "f": 2.5, "items": [3, 1, 2], "d": {"b": 2, "a": 1, "C": 3},
     "words": ["pear", "Apple", "fig"], "s": "a,b,,c", "empty": [], "none": None, "t": True}

CASES = [
    # whitespace control, trim_blocks, lstrip_blocks
    ("ws", "A\n  {% if t %}\n  B\n  {% endif %}\nC\n"),
    ("ws-minus", "A  {%- if t -%}  B  {%- endif -%}  C"),
    ("ws-plus", "A\n  {%+ if t %}x{% endif +%}\nB"),
    ("ws-expr", "a {{- n -}} b {{ n }}\n{# c #}\nd"),
    ("ws-comment", "x\n    {# hi #}\ny"),
    ("raw", "{% raw %}{{ n }}{% endraw %}"),
    # expressions
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}"),
    ("floats", "{{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 3.0 }} {{ f * 2 }} {{ 10 / 4 }} {{ 1 / 3 }}"),
    ("compare", "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ n != 7 }} {{ 2 in items }} {{ 'b' in 'abc' }} {{ 'x' not in d }}"),
    ("logic", "{{ none or 'x' }} {{ 0 and 1 }} {{ not t }} {{ 'y' if t else 'n' }} {{ 'y' if none }}|"),
    ("concat", "{{ 'a' ~ 1 ~ none ~ t }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }}"),
    ("literals", "{{ [1, 'two', 3.0, none, true] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2)|list }} {{ 'it\\'s' }} {{ \"q\\\"\" }}"),
    ("str-repr", "{{ ['a\\nb', \"it's\", 'x\"y'] }}"),
    ("slices", "{{ items[1:] }} {{ items[:-1] }} {{ items[::-1] }} {{ 'hello'[1:3] }} {{ 'Grüße'[2:] }} {{ items[-1] }}"),
    ("lookup", "{{ messages[0]['role'] }} {{ messages[0].content }} {{ d.missing is defined }} {{ messages[9] is defined }}"),
    ("undefined", "[{{ nope }}] {{ nope is defined }} {{ nope|default('dflt') }} {{ none|default('x') }} {{ ''|default('e', true) }}"),
    ("undefined-attr", "{{ nope.x }}"),
    # statements
    ("for", "{% for m in messages %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}"),
    ("for-else", "{% for x in empty %}{{ x }}{% else %}none{% endfor %}"),
    ("for-if", "{% for x in items if x > 1 %}{{ x }}{{ loop.index0 }}{{ loop.first }}{% endfor %}"),
    ("for-unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
    ("for-dict", "{% for k in d %}{{ k }}{% endfor %}"),
    ("loop-prev-next", "{% for x in items %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}"),
    ("break-continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("scope", "{% set x = 1 %}{% for i in items %}{% set x = i %}{% endfor %}{{ x }}"),
    ("namespace", "{% set ns = namespace(count=0, last=none) %}{% for i in items %}{% set ns.count = ns.count + i %}{% set ns.last = i %}{% endfor %}{{ ns.count }} {{ ns.last }}"),
    ("set-block", "{% set block %}Hello {{ name|trim }}{% endset %}[{{ block }}]"),
    ("set-tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}"),
    ("if-elif", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} {% endfor %}"),
    ("macro", "{% macro greet(who, punct='!') %}Hi {{ who }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', who='C') }}"),
    ("macro-recursive", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}"),
    ("call-block", "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inside{% endcall %}"),
    ("filter-block", "{% filter upper %}shout {{ name|trim }}{% endfilter %}"),
    # filters
    ("filters-str", "{{ name|trim }}|{{ name|upper }}|{{ name|lower }}|{{ 'ab cd'|title }}|{{ 'aBC'|capitalize }}|{{ name|length }}|{{ 'Grüße'|length }}"),
    ("filters-list", "{{ items|first }} {{ items|last }} {{ items|sort }} {{ items|sort(reverse=true) }} {{ words|sort }} {{ items|sum }} {{ items|min }} {{ words|max }} {{ [1, 1, 2]|unique|list }} {{ items|reverse|list }}"),
    ("join", "{{ items|join(', ') }} {{ words|join }} {{ messages|map(attribute='role')|join('/') }}"),
    ("select", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ messages|rejectattr('content')|list|length }} {{ items|select('odd')|list }} {{ items|reject('even')|list }}"),
    ("map-filter", "{{ words|map('upper')|list }} {{ ['1', '2']|map('int')|sum }}"),
    ("dictsort", "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|items|list }}"),
    ("replace-int", "{{ 'aaa'|replace('a', 'b', 2) }} {{ '42'|int + 1 }} {{ 'x'|int }} {{ '3.7'|int }} {{ 3.7|int }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }}"),
    ("indent", "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(4, true) }}|{{ 'x\\n\\ny'|indent(1, blank=true) }}"),
    ("string-filter", "{{ items|string }} {{ none|string }} {{ 12|string + 'x' }} {{ d|length }} {{ t|string }}"),
    ("escape", "{{ '<a&b>'|e }} {{ \"'q'\"|escape }} {{ 'x'|safe + '<y>' }} {{ '<z>' + 'w'|safe }}"),
    # tojson as transformers defines it
    ("tojson", "{{ messages|tojson }}"),
    ("tojson-args", "{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ items|tojson(separators=(',', ':')) }}|{{ 'é<>'|tojson(ensure_ascii=true) }}"),
    ("tojson-nested-indent", "{{ {'a': [1, {'b': none}], 'c': {}}|tojson(indent=4) }}"),
    ("tojson-floats", "{{ [1.0, 0.5, 1e-07, 123456789.0, 1e22, -0.0]|tojson }}"),
    # tests
    ("tests", "{{ 'a' is string }} {{ 1 is number }} {{ d is mapping }} {{ items is iterable }} {{ 'x' is iterable }} {{ none is none }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ t is boolean }} {{ 1 is integer }} {{ 1.0 is float }} {{ items is sequence }} {{ d is not string }} {{ 'ab' is lower }} {{ nope is undefined }}"),
    ("test-sameas", "{{ none is sameas none }} {{ t is sameas true }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 'a' is in 'abc' }}"),
    # str methods
    ("str-methods", "{{ name.strip() }}|{{ name.lstrip() }}|{{ name.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ s.split(',') }}|{{ ' a  b '.split() }}|{{ s.split(',', 1) }}|{{ 'a.b.c'.rsplit('.', 1) }}"),
    ("str-methods2", "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'aXa'.replace('a', 'b') }} {{ 'ab'.upper() }} {{ 'hello world'.title() }} {{ 'abcb'.find('b') }} {{ 'abcb'.count('b') }} {{ '-'.join(['a', 'b']) }} {{ 'a{}c{}'.format(1, 'x') }} {{ '{0}{name}'.format('p', name='q') }}"),
    ("dict-methods", "{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d['b'] }}"),
    ("int-keys", "{% set m = {1: 'one', 2: 'two'} %}{{ m[1] }} {{ m|dictsort }} {{ 2 in m }}"),
    # globals and errors
    ("range", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }}"),
    ("raise", "{% if t %}{{ raise_exception('no tools here') }}{% endif %}"),
    ("sandbox-append", "{% set l = [] %}{{ l.append(1) }}"),
    ("generator-length", "{{ items|select('odd')|length }}"),
    ("generator-true", "{% if empty|select('odd') %}yes{% else %}no{% endif %}"),
    ("not-iterable", "{% for x in n %}{% endfor %}"),
    ("bad-filter", "{{ n|nosuchfilter }}"),
    ("div-zero", "{{ 1 // 0 }}"),
    ("none-attr", "[{{ none.x }}]"),
    ("chat", "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}{% elif m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function|tojson }}</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"),
]


def c_string(s):
    out = '"'
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c == '"' or c == "\\":
            out += "\\" + c
        elif c == "\n":
            out += "\\n"
        elif 32 <= ch < 127 and c != "?":
            out += c
        else:
            out += f'\\{ch:03o}'
    return out + '"'


def main():
    e = env()
    print("// Generated by tests/test_jinja_golden.py with jinja2 " + jinja2.__version__ + "; do not edit.")
    print("static const char kGoldenVars[] = " + c_string(json.dumps(V, ensure_ascii=False)) + ";")
    print("static const JinjaGolden kGolden[] = {")
    for name, src in CASES:
        try:
            want, ok = e.from_string(src).render(**V), True
        except Exception as ex:  # noqa: BLE001 -- any jinja2 failure is an expected failure
            want, ok = type(ex).__name__, False
        print(f"    {{{c_string(name)}, {c_string(src)}, {c_string(want)}, {'true' if ok else 'false'}}},")
    print("};")


if __name__ == "__main__":
    main()
