"""Structured output against a live `ember serve` (run by tools/check-structured-output).

Draws seeded samples at temperature 1 for a dozen JSON schemas (nested objects, arrays with
bounds, enums, $ref and recursion, anyOf/oneOf, patterns, formats, additionalProperties)
through the `openai` client's response_format json_schema, and checks that every output
parses and validates with `jsonschema`; then chat.completions.parse with a pydantic model,
json_object mode, llama-server's `grammar` field, and that an unsupported keyword is a 400
naming it. Prints one line per schema and a summary; exits 1 on any failure.
"""
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional

import jsonschema
import openai
from pydantic import BaseModel

from structured_output_schemas import PROMPTS, SCHEMAS


def sample(client, model, name, seed):
    schema = SCHEMAS[name]
    r = client.chat.completions.create(
        model=model, temperature=1.0, seed=seed, max_tokens=512,
        messages=[{"role": "user", "content": PROMPTS[name] + " Answer in JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}})
    text = r.choices[0].message.content
    try:
        jsonschema.validate(json.loads(text), schema)
        return True, r.choices[0].finish_reason, text, r.usage.completion_tokens
    except Exception as e:  # noqa: BLE001 (any failure to parse or validate counts)
        return False, f"{r.choices[0].finish_reason}: {e}", text, r.usage.completion_tokens


class Person(BaseModel):
    name: str
    age: int
    hobbies: List[str]
    nickname: Optional[str]


def main():
    url, model, per_schema = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = openai.OpenAI(base_url=url, api_key="none", timeout=3600)
    failures = 0
    start, tokens = time.time(), 0
    jobs = [(n, s) for n in SCHEMAS for s in range(per_schema)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda j: (j[0], sample(client, model, *j)), jobs))
    for name in SCHEMAS:
        mine = [r for n, r in results if n == name]
        bad = [r for r in mine if not r[0]]
        tokens += sum(r[3] for r in mine)
        print(f"{name:12s} {len(mine) - len(bad)}/{len(mine)} valid; e.g. {mine[0][2][:100]!r}")
        for b in bad[:3]:
            print(f"   FAIL {b[1]}: {b[2][:300]!r}")
        failures += len(bad)
    print(f"samples: {len(results)}, valid: {len(results) - failures}, tokens: {tokens}, {time.time() - start:.0f} s")

    parsed = client.chat.completions.parse(model=model, temperature=1.0, seed=1, max_tokens=256,
                                           messages=[{"role": "user", "content": "Describe a person."}],
                                           response_format=Person)
    ok = isinstance(parsed.choices[0].message.parsed, Person)
    print(f"chat.completions.parse -> {parsed.choices[0].message.parsed!r}: {'ok' if ok else 'FAIL'}")
    failures += not ok

    for seed in range(5):
        r = client.chat.completions.create(model=model, temperature=1.0, seed=seed, max_tokens=256,
                                           messages=[{"role": "user", "content": "Any JSON please."}],
                                           response_format={"type": "json_object"})
        ok = isinstance(json.loads(r.choices[0].message.content), dict)
        failures += not ok
    print("json_object: 5 samples parse as objects" if not failures else "json_object: checked")

    r = client.chat.completions.create(model=model, temperature=1.0, seed=3, max_tokens=8,
                                       messages=[{"role": "user", "content": "Is water wet?"}],
                                       extra_body={"grammar": 'root ::= "yes" | "no"\n'})
    ok = r.choices[0].message.content in ("yes", "no")
    print(f"grammar field -> {r.choices[0].message.content!r}: {'ok' if ok else 'FAIL'}")
    failures += not ok

    try:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}],
                                       response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {
                                           "type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}}})
        print("unsupported keyword: no error: FAIL")
        failures += 1
    except openai.BadRequestError as e:
        ok = "minimum" in str(e)
        print(f"unsupported keyword -> 400: {e.message[:120]}: {'ok' if ok else 'FAIL'}")
        failures += not ok
    print("structured output check:", "PASS" if failures == 0 else f"FAIL ({failures})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
