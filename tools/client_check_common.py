"""Shared by the client checks (tools/check-openai-client): pass/fail lines, the tool every
check uses, and whether the server's chat template renders tools."""
import json
import sys
import urllib.error
import urllib.request

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "the city's name"}},
                  "required": ["city"]}
failures = []


def check(what, ok):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def finish(name):
    print(f"{name}: {'all passed' if not failures else f'{len(failures)} failed'}")
    sys.exit(1 if failures else 0)


def tools_rendered(base_url, key):
    """True when /apply-template renders a request with tools (the model's own Jinja template)."""
    root = base_url.rsplit("/v1", 1)[0]
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": {"name": "f", "parameters": WEATHER_SCHEMA}}]}).encode()
    request = urllib.request.Request(root + "/apply-template", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request) as answer:
            return "f" in json.load(answer)["prompt"]
    except urllib.error.HTTPError:
        return False
