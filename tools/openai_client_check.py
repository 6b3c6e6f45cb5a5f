"""The official openai client against ember serve (see tools/check-openai-client)."""
import sys

import openai

base_url, model, key = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=key)
failures = []


def check(what, ok):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


check("models.list names the model", [m.id for m in client.models.list()] == [model])

messages = [{"role": "user", "content": "Tell me a story about a cat."}]
whole = client.chat.completions.create(model=model, messages=messages, max_tokens=24, temperature=0)
text = whole.choices[0].message.content
check(f"chat, whole: {whole.usage.completion_tokens} tokens, finish {whole.choices[0].finish_reason}",
      whole.usage.completion_tokens > 0 and whole.choices[0].finish_reason in ("stop", "length"))
parts, usage = [], None
for chunk in client.chat.completions.create(model=model, messages=messages, max_tokens=24, temperature=0,
                                            stream=True, stream_options={"include_usage": True}):
    if chunk.usage:
        usage = chunk.usage
    for c in chunk.choices:
        parts.append(c.delta.content or "")
check("chat, streamed == whole", "".join(parts) == text)
check("chat, streamed usage chunk", usage is not None and usage.completion_tokens == whole.usage.completion_tokens)

whole = client.completions.create(model=model, prompt="Once upon a time", max_tokens=24, temperature=0)
text = whole.choices[0].text
check(f"completions, whole: {len(text)} characters", len(text) > 0)
streamed = "".join(c.choices[0].text for c in
                   client.completions.create(model=model, prompt="Once upon a time", max_tokens=24, temperature=0, stream=True)
                   if c.choices)
check("completions, streamed == whole", streamed == text)

try:
    client.completions.create(model=model, prompt="x", max_tokens=24, temperature=7)
    check("a bad temperature raises BadRequestError", False)
except openai.BadRequestError as e:
    check(f"a bad temperature raises BadRequestError ({e.body.get('param') if isinstance(e.body, dict) else e.body})", True)
try:
    openai.OpenAI(base_url=base_url, api_key="wrong").models.list()
    check("a wrong key raises AuthenticationError", False)
except openai.AuthenticationError:
    check("a wrong key raises AuthenticationError", True)

print(f"check-openai-client: {'all passed' if not failures else f'{len(failures)} failed'}")
sys.exit(1 if failures else 0)
