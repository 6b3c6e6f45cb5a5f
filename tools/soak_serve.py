"""Mixed traffic with random disconnects against ember serve (see tools/soak-serve). Stdlib only."""
import http.client
import json
import random
import socket
import sys
import threading
import time
import urllib.parse

url, pid, seconds, clients = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
host, port = urllib.parse.urlparse(url).hostname, urllib.parse.urlparse(url).port
counts, lock = {}, threading.Lock()
deadline = time.time() + seconds
WORDS = "the cat sat on a mat and then it ran far away into the quiet night".split()


def count(what):
    with lock:
        counts[what] = counts.get(what, 0) + 1


def body(rng):
    prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60)))
    b = {"max_tokens": rng.randint(1, 200), "temperature": rng.choice([0, 0.8]), "seed": rng.randint(0, 1 << 30)}
    if rng.random() < 0.5:
        b["messages"], path = [{"role": "user", "content": prompt}], "/v1/chat/completions"
    else:
        b["prompt"], path = prompt, "/v1/completions"
    if rng.random() < 0.2:
        b["stop"] = [rng.choice(WORDS)]
    if rng.random() < 0.5:
        b["stream"] = True
    return path, b


def hang_up(rng, path, b):
    """Sends a streaming request, reads a little, and closes the socket."""
    b["stream"] = True
    data = json.dumps(b).encode()
    s = socket.create_connection((host, port), timeout=60)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    s.recv(rng.randint(1, 2000))
    s.close()
    count("hung up")


def one(rng):
    path, b = body(rng)
    if rng.random() < 0.15:
        return hang_up(rng, path, b)
    bad = rng.random() < 0.05
    data = b"{\"prompt\": 12" if bad else json.dumps(b).encode()
    c = http.client.HTTPConnection(host, port, timeout=300)
    try:
        c.request("POST", path, data, {"Content-Type": "application/json"})
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
    except Exception as e:  # a transport failure is a failed request
        count(f"failed: {type(e).__name__}")
        return
    finally:
        c.close()
    if r.status == 200 and not bad and (not b.get("stream") or text.rstrip().endswith("data: [DONE]")):
        count("ok")
    elif r.status == 503 and not bad:
        count("503 (intended)")
        time.sleep(rng.uniform(0.2, 1.0))  # as a client honouring Retry-After would
    elif r.status == 400 and bad:
        count("400 (intended)")
    else:
        count(f"failed: HTTP {r.status} {text[:120]}")


def client(i):
    rng = random.Random(i)
    while time.time() < deadline:
        one(rng)


def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def metrics():
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line and line[0] != "#"}


KV_USED = 'ember_kv_blocks_used{window="0"}'
threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads:
    t.start()
time.sleep(min(60, seconds / 4))
rss_start = rss_kib()
while any(t.is_alive() for t in threads):
    time.sleep(1)
rss_end = rss_kib()
for _ in range(100):  # hung-up streams are noticed at the server's next write
    m = metrics()
    if m.get("ember_requests_running") == 0 and m.get(KV_USED) == 0:
        break
    time.sleep(0.1)
failed = sum(n for k, n in counts.items() if k.startswith("failed"))
print(f"soak-serve: {seconds:.0f} s, {clients} clients: {json.dumps(counts, sort_keys=True)}")
print(f"soak-serve: RSS {rss_start} KiB after the first minute, {rss_end} KiB at the end; "
      f"KV blocks used {m.get(KV_USED)}, running {m.get('ember_requests_running')}, "
      f"generated {m.get('ember_generation_tokens_total'):.0f} tokens, preemptions {m.get('ember_preemptions_total'):.0f}")
ok = failed == 0 and rss_end <= rss_start * 1.10 and m.get(KV_USED) == 0
print("soak-serve: " + ("passed" if ok else "FAILED"))
sys.exit(0 if ok else 1)
