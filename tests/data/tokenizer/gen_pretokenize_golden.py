#!/usr/bin/env python3
"""Writes pretokenize_golden.txt: how each pre-tokenizer family splits a set of strings, computed
with the third-party `regex` module from the families' regular expressions (as written in their
tokenizer.json files and llama.cpp), applied as a chain of "isolated" splits. ember's hand-written
scanners (src/tokenizer/pretokenizer.cpp) are checked against it by test_tokenizer_pretokenize.

Line format: family TAB input-hex TAB piece-hex,piece-hex,...
Usage: python3 gen_pretokenize_golden.py ../../../../shared/vocab > pretokenize_golden.txt"""
import glob
import os
import sys

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
DEEPSEEK_LETTERS = (
    "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
    "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
    "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
    "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
    "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
    "\U0001e900-\U0001e943")
CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
# tiktoken's o200k_base (gpt-4o, gpt-oss), as tiktoken_ext/openai_public.py writes it.
O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

FAMILIES = {
    "gpt-2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "deepseek-llm": [r"[\r\n]", r"\s?[" + DEEPSEEK_LETTERS + r"]+",
                     "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", r"\s+\Z", CJK, r"\p{N}+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "gpt-4o": [O200K],
}

EXTRA = [
    "Hello world", "  Hello", "x  \n  y", "!!!\n\nabc", "don't DON'T we'LL", "123456789 12.5%",
    "a\u3000b \u00a0c\u2003d", "tab\tafter\t\tx", "\r\n\r\n  \r\n", "(paren) [bracket] {brace}",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5", "\u212a\u2126\u1fbe\u1f7d",
    "\u0661\u0662\u0663 \u00bd \u2460", "e\u0301t\u00e9 na\u00efve", "trailing spaces   ",
    "\uff21\uff22\uff01\uff1f\u3001\u3002", "\u4f60\u597d\uff0c\u4e16\u754c\uff01 \ud55c\uad6d\uc5b4",
    "x=a+b<c>d^e~f|g`h$i", "    def f(x):\n        return x ** 2\n",
    # o200k's cased words: camel case, all caps, non-ASCII caps, titlecase, marks, contractions
    "HTTPServer getHTTPResponse iPhone XMLHttpRequest", "\u00c9COLE \u00e9cole \u039a\u038c\u03a3\u039c\u0395 \u01c5ungla",
    "e\u0301te\u0301 \u0915\u093f\u0924\u093e\u092c \u0301x", "I'M HE'LL you'Re they'VE", "a/b//c\n/d 1234567",
    "\u02b0a\u02b0 \u00aaB \u3042\u3044 x\u0301Y", "'s 'S '", "path/to/file.txt\r\n/\r\n",
]


def split_chain(text, patterns):
    frags = [text]
    for pat in patterns:
        rx = regex.compile(pat)
        out = []
        for f in frags:
            pos = 0
            for m in rx.finditer(f):
                if m.start() > pos:
                    out.append(f[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(f):
                out.append(f[pos:])
        frags = out
    return frags


def main():
    vocab_dir = sys.argv[1]
    texts = []
    for path in sorted(glob.glob(os.path.join(vocab_dir, "*.inp"))):
        data = open(path, "rb").read().decode("utf-8")
        texts += data.split("\n__ggml_vocab_test__\n")[:-1]
    texts += EXTRA
    seen = set()
    for fam, pats in FAMILIES.items():
        for t in texts:
            if (fam, t) in seen or not t:
                continue
            seen.add((fam, t))
            pieces = split_chain(t, pats)
            assert "".join(pieces) == t
            print(fam, t.encode().hex(), ",".join(p.encode().hex() for p in pieces), sep="\t")


if __name__ == "__main__":
    main()
