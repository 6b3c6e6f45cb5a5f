"""The official openai client against ember serve (see tools/check-openai-client): chat and
completions, then the Responses API, then tool calling (chat streamed and not, a named
tool_choice, a two-turn loop; responses.create with a function tool)."""
import json
import sys

import openai

from client_check_common import WEATHER_SCHEMA, check, failures, finish, tools_rendered

base_url, model, key = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=key)


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

# The Responses API: the same text as chat for the same input, whole and streamed.
hello = [{"role": "user", "content": "Say hello."}]
chat_text = client.chat.completions.create(model=model, messages=hello, max_tokens=16, temperature=0).choices[0].message.content
resp = client.responses.create(model=model, input="Say hello.", max_output_tokens=16, temperature=0)
check(f"responses.create, no tools: output_text == chat text ({resp.status})", resp.output_text == chat_text)
deltas, done = [], None
for event in client.responses.create(model=model, input="Say hello.", max_output_tokens=16, temperature=0, stream=True):
    if event.type == "response.output_text.delta":
        deltas.append(event.delta)
    if event.type in ("response.completed", "response.incomplete"):
        done = event.response
check("responses.create, streamed: deltas == output_text", "".join(deltas) == resp.output_text and done is not None
      and done.output_text == resp.output_text)

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city",
                                            "parameters": WEATHER_SCHEMA}}
ask = [{"role": "user", "content": "What's the weather in Paris?"}]


def call_ok(message):
    calls = message.tool_calls or []
    if not calls or calls[0].function.name != "get_weather":
        return False
    try:
        return "city" in json.loads(calls[0].function.arguments)
    except ValueError:
        return False


def streamed_calls(**kwargs):
    """Tool-call deltas joined by index: {index: [name, arguments]}, and the finish reason."""
    joined, finish_reason = {}, None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for c in chunk.choices:
            finish_reason = c.finish_reason or finish_reason
            for t in c.delta.tool_calls or []:
                entry = joined.setdefault(t.index, ["", ""])
                entry[0] += (t.function.name or "") if t.function else ""
                entry[1] += (t.function.arguments or "") if t.function else ""
    return joined, finish_reason


if not tools_rendered(base_url, key):
    print("SKIP tool checks: this build's chat template does not render 'tools' (they need the Jinja engine)")
else:
    request = dict(model=model, messages=ask, tools=[WEATHER], tool_choice="required", temperature=0, max_tokens=96)
    r = client.chat.completions.create(**request)
    m = r.choices[0].message
    check(f"tools, required: finish {r.choices[0].finish_reason}, call {m.tool_calls and m.tool_calls[0].function}",
          r.choices[0].finish_reason == "tool_calls" and call_ok(m))
    joined, finish_reason = streamed_calls(**request)
    check("tools, streamed: arguments joined by index == whole",
          finish_reason == "tool_calls" and m.tool_calls is not None
          and joined.get(0) == [m.tool_calls[0].function.name, m.tool_calls[0].function.arguments])
    TIME = {"type": "function", "function": {"name": "get_time", "description": "The time now in a city", "parameters": WEATHER_SCHEMA}}
    named = client.chat.completions.create(model=model, messages=ask, tools=[TIME, WEATHER],
                                           tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                           temperature=0, max_tokens=96)
    check("tools, named tool_choice forces the call", call_ok(named.choices[0].message))
    if m.tool_calls:
        loop = ask + [m.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": m.tool_calls[0].id, "content": "18C and sunny"}]
        final = client.chat.completions.create(model=model, messages=loop, tools=[WEATHER], temperature=0, max_tokens=64)
        check(f"tools, two turns: a final answer ({final.choices[0].message.content!r:.60})",
              bool(final.choices[0].message.content) and final.choices[0].finish_reason in ("stop", "length"))
    flat = {"type": "function", "name": "get_weather", "description": "The current weather in a city", "parameters": WEATHER_SCHEMA}
    resp = client.responses.create(model=model, input="What's the weather in Paris?", tools=[flat], tool_choice="required",
                                   temperature=0, max_output_tokens=96)
    calls = [item for item in resp.output if item.type == "function_call"]
    check(f"responses.create with a function tool: {calls[0].name if calls else 'no'} function_call",
          bool(calls) and calls[0].name == "get_weather" and "city" in json.loads(calls[0].arguments))

finish("check-openai-client")
