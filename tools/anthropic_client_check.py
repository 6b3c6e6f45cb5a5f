"""The official anthropic client against ember serve's /v1/messages (see
tools/check-openai-client), with x-api-key: messages.create and messages.stream give the same
text, count_tokens counts the prompt, and with a tool both give a tool_use block."""
import sys

import anthropic

from client_check_common import WEATHER_SCHEMA, check, finish, tools_rendered

root_url, key = sys.argv[1:3]
client = anthropic.Anthropic(base_url=root_url, api_key=key)  # sends x-api-key
story = [{"role": "user", "content": "Tell me a story about a cat."}]
GREEDY = {"temperature": 0}  # anthropic 2.x's create() has no temperature argument; the API still takes it

m = client.messages.create(model="claude-any", max_tokens=24, messages=story, extra_body=GREEDY, system="Be brief.")
check(f"messages.create: a text block, stop_reason {m.stop_reason}",
      m.content and m.content[0].type == "text" and m.stop_reason in ("end_turn", "max_tokens"))
with client.messages.stream(model="claude-any", max_tokens=24, messages=story, extra_body=GREEDY, system="Be brief.") as s:
    streamed = "".join(s.text_stream)
check("messages.stream: text_stream == messages.create text", streamed == m.content[0].text)
count = client.messages.count_tokens(model="claude-any", messages=story, system="Be brief.")
check(f"messages.count_tokens == the prompt's tokens ({count.input_tokens})",
      count.input_tokens == m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0))
try:
    anthropic.Anthropic(base_url=root_url, api_key="wrong").messages.create(model="x", max_tokens=4, messages=story)
    check("a wrong x-api-key raises AuthenticationError", False)
except anthropic.AuthenticationError:
    check("a wrong x-api-key raises AuthenticationError", True)

WEATHER = {"name": "get_weather", "description": "The current weather in a city", "input_schema": WEATHER_SCHEMA}
ask = [{"role": "user", "content": "What's the weather in Paris?"}]
if not tools_rendered(root_url + "/v1", key):
    print("SKIP tool checks: this build's chat template does not render 'tools' (they need the Jinja engine)")
else:
    m = client.messages.create(model="claude-any", max_tokens=96, messages=ask, tools=[WEATHER], tool_choice={"type": "any"},
                               extra_body=GREEDY)
    uses = [b for b in m.content if b.type == "tool_use"]
    check(f"messages.create with a tool: stop_reason {m.stop_reason}, {uses[0].input if uses else 'no tool_use'}",
          m.stop_reason == "tool_use" and uses and uses[0].name == "get_weather" and "city" in uses[0].input)
    with client.messages.stream(model="claude-any", max_tokens=96, messages=ask, tools=[WEATHER], tool_choice={"type": "any"},
                                extra_body=GREEDY) as s:
        final = s.get_final_message()
    streamed_uses = [b for b in final.content if b.type == "tool_use"]
    check("messages.stream with a tool: the same tool_use input",
          streamed_uses and uses and streamed_uses[0].input == uses[0].input and final.stop_reason == "tool_use")
    if uses:
        loop = ask + [{"role": "assistant", "content": [u.model_dump() for u in uses]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "18C and sunny"}]}]
        answer = client.messages.create(model="claude-any", max_tokens=64, messages=loop, tools=[WEATHER], extra_body=GREEDY)
        check("messages, two turns: a final text answer", any(b.type == "text" and b.text for b in answer.content))

finish("check-anthropic-client")
