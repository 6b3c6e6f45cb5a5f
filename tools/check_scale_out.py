"""Three `ember serve` replicas on loopback behind HAProxy, nginx and sglang-router, driven by
`ember bench-serve` (see tools/check-scale-out). Stdlib only.

Scenarios, for each balancer:
  drain     SIGTERM one replica under load: no request may fail.
  rejoin    the drained replica, restarted, serves again (health checks or passive retry).
  kill      SIGKILL one replica under load: every whole (non-streamed) request succeeds,
            only streams that were sending from it may fail, and they fail visibly (no
            [DONE]); every success carries all its tokens; then the two left serve on.
  affinity  multi-turn sessions with long per-session prefixes: the prefix-cache hit rate
            summed over the replicas' /metrics and bench-serve's median TTFT, for round
            robin, X-Session-ID hashing and the router's cache-aware policy.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

WORDS = ("the a of and to in is was for on with as by at from that this it be are or an not "
         "river stone light garden window morning winter letter music silver forest harbor "
         "engine paper memory signal island market violin candle shadow meadow bridge").split()


def log(msg):
    print(f"[check-scale-out {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def http_get(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def wait_until(what, check, seconds, proc=None):
    """Polls `check` until it holds; fails early when `proc` exits (a port in use, say)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {proc.returncode} (see its log)")
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class Replica:
    def __init__(self, args, port, workdir):
        self.args, self.port, self.workdir, self.proc = args, port, workdir, None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        cmd = [self.args.ember, "serve", "-m", self.args.model, "--port", str(self.port), "-t", "1",
               "-np", "4", "-c", "2048", "--kv-size", str(self.args.kv_size), "--alias", "ember",
               "--max-queue", "64", "--metrics-no-auth", "--metrics-compat", "vllm",
               "--drain-grace", str(self.args.drain_grace)]
        out = open(os.path.join(self.workdir, f"replica-{self.port}.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        wait_until(f"replica :{self.port} ready", lambda: http_get(self.url + "/health")[0] == 200, 60, self.proc)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, seconds=60):
        return self.proc.wait(timeout=seconds)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def metric(self, series, missing=None):
        """One sample; `missing` when the series is absent (else that is an error)."""
        status, text = http_get(self.url + "/metrics")
        if status != 200:
            raise RuntimeError(f"replica :{self.port} /metrics answered {status}")
        m = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
        if m is None and missing is None:
            raise RuntimeError(f"replica :{self.port} has no {series}")
        return float(m.group(1)) if m else missing


def shipped_config(path, lb_port, replica_ports):
    """The file from deploy/ with its loopback addresses moved to this run's ports."""
    text = open(path).read()
    text = text.replace("127.0.0.1:8080", f"127.0.0.1:{lb_port}")
    for i, port in enumerate(replica_ports):
        text = text.replace(f"127.0.0.1:{8081 + i}", f"127.0.0.1:{port}")
    return text


class Balancer:
    """kind: haproxy | haproxy-rr | nginx | router | router-rr (-rr: round robin)."""

    def __init__(self, args, kind, port, replicas, workdir):
        self.args, self.kind, self.port, self.replicas, self.workdir = args, kind, port, replicas, workdir
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        ports = [r.port for r in self.replicas]
        out = open(os.path.join(self.workdir, f"{self.kind}.log"), "a")
        if self.kind.startswith("haproxy"):
            cfg = shipped_config(os.path.join(self.args.deploy, "haproxy", "haproxy.cfg"), self.port, ports)
            if self.kind == "haproxy-rr":
                cfg = cfg.replace("balance hdr(X-Session-ID)", "balance roundrobin")
            path = os.path.join(self.workdir, f"{self.kind}.cfg")
            open(path, "w").write(cfg)
            cmd = ["haproxy", "-db", "-f", path]
        elif self.kind == "nginx":
            prefix = os.path.join(self.workdir, "nginx")
            os.makedirs(prefix, exist_ok=True)
            for name in ("nginx.conf", "ember.conf"):
                text = shipped_config(os.path.join(self.args.deploy, "nginx", name), self.port, ports)
                open(os.path.join(prefix, name), "w").write(text)
            cmd = ["nginx", "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")]
        else:
            policy = "round_robin" if self.kind == "router-rr" else "cache_aware"
            cmd = [os.path.join(self.args.deploy, "sglang-router", "launch"), "--port", str(self.port),
                   "--policy", policy, *[r.url for r in self.replicas]]
        env = dict(os.environ, SGLANG_ROUTER_PYTHON=self.args.router_python)
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        body = json.dumps({"model": "ember", "prompt": "the", "max_tokens": 1}).encode()

        def answers():
            try:
                req = urllib.request.Request(self.url + "/v1/completions", body, {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=5) as r:
                    return r.status == 200
            except OSError:
                return False
        wait_until(f"{self.kind} on :{self.port} answering", answers, 60, self.proc)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def mixed_workload(n, seed):
    """Half streamed, half whole; prompts of 10-40 words, 24-96 tokens each."""
    rng = random.Random(seed)
    return [{"prompt": words(rng, rng.randint(10, 40)), "max_tokens": rng.randint(24, 96),
             "stream": rng.random() < 0.5} for _ in range(n)]


def session_workload(sessions, turns, system_words, seed):
    """Turn-major multi-turn chats: each session has its own long system text, and every turn
    repeats the whole conversation so far (the assistant's turns are fixed text)."""
    rng = random.Random(seed)
    history = [f"Session {s}. " + words(rng, system_words) for s in range(sessions)]
    items = []
    for _ in range(turns):
        for s in range(sessions):
            history[s] += "\nUser: " + words(rng, 12) + "\nAssistant:"
            items.append({"prompt": history[s], "max_tokens": 12, "session": f"s{s}"})
            history[s] += " " + words(rng, 12)
    return items


class Bench:
    """`ember bench-serve` over a prompts file, in the background."""

    def __init__(self, args, url, items, name, workdir):
        self.items, self.json_path = items, os.path.join(workdir, f"{name}.json")
        prompts = os.path.join(workdir, f"{name}.jsonl")
        with open(prompts, "w") as f:
            for it in items:
                f.write(json.dumps(it) + "\n")
        cmd = [args.ember, "bench-serve", url, "--prompts", prompts, "--model", "ember",
               "--max-concurrency", str(args.concurrency), "--timeout", "120", "--json", self.json_path]
        self.log = open(os.path.join(workdir, f"{name}.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.started = time.time()

    def result(self):
        self.proc.wait(timeout=600)
        report = json.load(open(self.json_path))
        return report, report["requests"]


def exact_tokens(items, requests):
    """Every success carries all its tokens (ignore_eos: exactly max_tokens)."""
    return all(r["output_tokens"] == it["max_tokens"] for it, r in zip(items, requests) if r["failure"] == "none")


class Cluster:
    def __init__(self, args, workdir):
        self.args, self.workdir = args, workdir
        self.replicas = [Replica(args, args.base_port + 1 + i, workdir) for i in range(3)]

    def fresh(self):
        for r in self.replicas:
            r.stop()
        for r in self.replicas:
            r.start()

    def stop(self):
        for r in self.replicas:
            r.stop()

    def balancer(self, kind):
        return Balancer(self.args, kind, self.args.base_port, self.replicas, self.workdir)

    def hit_rate(self):
        hits = sum(r.metric("ember_prefix_cache_hits_total") for r in self.replicas)
        queries = sum(r.metric("ember_prefix_cache_queries_total") for r in self.replicas)
        return hits / queries if queries else 0.0


def under_load(args, cluster, lb, name, sig, n):
    """Signals the busiest replica a while into a bench (see below); returns the bench's
    items, report and requests, the victim and its running requests when hit."""
    generated_before = sum(r.metric("ember_generation_tokens_total", 0.0) for r in cluster.replicas)
    workload = mixed_workload(n, seed=len(name))
    bench = Bench(args, lb.url, workload, name, cluster.workdir)
    # The fault comes fault_after seconds in, or sooner once a quarter of the workload's
    # tokens are out (an idle machine finishes the whole load in about that time).
    quarter = sum(item["max_tokens"] for item in workload) / 4
    deadline = time.monotonic() + args.fault_after
    while time.monotonic() < deadline:
        if sum(r.metric("ember_generation_tokens_total", 0.0) for r in cluster.replicas) - generated_before >= quarter:
            break
        time.sleep(0.05)
    busy = [(r.metric("ember_requests_running"), i, r) for i, r in enumerate(cluster.replicas)]
    running, _, victim = max(busy)
    victim.signal(sig)
    report, requests = bench.result()
    if running == 0:
        raise RuntimeError(f"{name}: no replica was running a request at the fault; raise --requests")
    return bench.items, report, requests, victim, running


def drain(args, cluster, lb):
    items, report, requests, victim, running = under_load(args, cluster, lb, f"{lb.kind}-drain", signal.SIGTERM, args.requests)
    code = victim.wait(60)
    victim.start()
    ok = report["failed"] == 0 and exact_tokens(items, requests) and code == 0
    return ok, {"requests": len(items), "failed": report["failed"], "victim_running": running,
                "replica_exit": code, "load_s": round(report["duration"], 1)}, victim


def rejoin(args, cluster, lb, replica):
    """The replica restarted after its drain is back in rotation: it serves a share of new load."""
    ok_series = 'ember_http_responses_total{status="200"}'
    before = replica.metric(ok_series, missing=0.0)
    items = mixed_workload(15, seed=5)
    report, _ = Bench(args, lb.url, items, f"{lb.kind}-rejoin", cluster.workdir).result()
    served = replica.metric(ok_series, missing=0.0) - before
    return report["failed"] == 0 and served > 0, {"requests": len(items), "failed": report["failed"],
                                                  "served_by_restarted_replica": int(served)}


def kill(args, cluster, lb):
    items, report, requests, victim, running = under_load(args, cluster, lb, f"{lb.kind}-kill", signal.SIGKILL, args.requests)
    victim.wait(10)
    whole_failed = sum(1 for it, r in zip(items, requests) if not it["stream"] and r["failure"] != "none")
    streams_failed = sum(1 for it, r in zip(items, requests) if it["stream"] and r["failure"] != "none")
    kinds = sorted({r["failure"] for r in requests if r["failure"] != "none"})
    after_items = mixed_workload(args.requests // 3, seed=99)
    after = Bench(args, lb.url, after_items, f"{lb.kind}-after-kill", cluster.workdir)
    after_report, after_requests = after.result()
    ok = (whole_failed == 0 and streams_failed <= args.concurrency and set(kinds) <= {"stream", "transport"}
          and exact_tokens(items, requests) and after_report["failed"] == 0 and exact_tokens(after_items, after_requests))
    return ok, {"requests": len(items), "victim_running": running, "whole_failed": whole_failed, "streams_cut": streams_failed,
                "failure_kinds": kinds, "after_kill_requests": len(after_items), "after_kill_failed": after_report["failed"]}


def affinity(args, cluster, kind):
    cluster.fresh()
    lb = cluster.balancer(kind)
    lb.start()
    try:
        items = session_workload(args.sessions, args.turns, args.system_words, seed=7)
        before = cluster.hit_rate()  # the balancer's own probe request; nearly nothing
        bench = Bench(args, lb.url, items, f"{kind}-affinity", cluster.workdir)
        report, requests = bench.result()
        ttfts = [r["ttft_ms"] for r in requests if r["failure"] == "none"]
        return {"policy": kind, "failed": report["failed"], "hit_rate": cluster.hit_rate(),
                "hit_rate_before": before, "median_ttft_ms": statistics.median(ttfts) if ttfts else None,
                "duration_s": report["duration"]}
    finally:
        lb.stop()


def failover(args, cluster, kind):
    results = {}
    cluster.fresh()
    lb = cluster.balancer(kind)
    lb.start()
    try:
        ok, facts, restarted = drain(args, cluster, lb)
        results["drain"] = (ok, facts)
        time.sleep(3)  # back in rotation: two good health checks, or nginx's fail_timeout
        results["rejoin"] = rejoin(args, cluster, lb, restarted)
        results["kill"] = kill(args, cluster, lb)
    finally:
        lb.stop()
    return results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--deploy", required=True)
    p.add_argument("--router-python", required=True)
    p.add_argument("--balancers", default="haproxy,nginx,router")
    p.add_argument("--scenarios", default="failover,affinity")
    p.add_argument("--base-port", type=int, default=18180)
    # Tokens of KV cache per replica: about a third of all sessions' prefixes, as a fleet's
    # cache is split over its replicas; round robin makes every replica hold every session.
    p.add_argument("--kv-size", type=int, default=5120)
    p.add_argument("--concurrency", type=int, default=6)
    p.add_argument("--requests", type=int, default=90)
    p.add_argument("--fault-after", type=float, default=2.0)
    # Longer than any balancer takes to see a failing /health (HAProxy 1 s, the router 2 s).
    p.add_argument("--drain-grace", type=float, default=3.0)
    # Not a multiple of 3: with 12, strict round robin over turn-major requests would send
    # every session back to the same replica by accident.
    p.add_argument("--sessions", type=int, default=11)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--system-words", type=int, default=120)
    p.add_argument("--out", default="")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))  # a time limit still stops every child
    workdir = tempfile.mkdtemp(prefix="ember-scale-out-")
    log(f"logs and reports in {workdir}")
    cluster = Cluster(args, workdir)
    balancers = args.balancers.split(",")
    summary = {"failover": {}, "affinity": []}
    passed = True
    try:
        if "failover" in args.scenarios:
            for kind in balancers:
                res = failover(args, cluster, kind)
                summary["failover"][kind] = {k: v[1] for k, v in res.items()}
                for scenario, (ok, facts) in res.items():
                    log(f"{kind:8} {scenario:6} {'PASS' if ok else 'FAIL'} {json.dumps(facts)}")
                    passed &= ok
        if "affinity" in args.scenarios:
            policies = ["haproxy-rr"] + [k for k in ("haproxy", "nginx", "router-rr", "router") if k.split("-")[0] in balancers]
            for kind in policies:
                res = affinity(args, cluster, kind)
                summary["affinity"].append(res)
                log(f"affinity {kind:10} hit rate {res['hit_rate']:.3f}  median TTFT {res['median_ttft_ms']:.0f} ms  "
                    f"failed {res['failed']}  ({res['duration_s']:.1f} s)")
            rr = summary["affinity"][0]
            for res in summary["affinity"][1:]:
                if res["policy"].endswith("-rr"):
                    continue
                ok = (res["failed"] == 0 and res["hit_rate"] >= 1.5 * rr["hit_rate"]
                      and res["median_ttft_ms"] < rr["median_ttft_ms"])
                log(f"affinity {res['policy']} against round robin: hit rate x{res['hit_rate'] / max(rr['hit_rate'], 1e-9):.2f}, "
                    f"median TTFT x{res['median_ttft_ms'] / rr['median_ttft_ms']:.2f}: {'PASS' if ok else 'FAIL'}")
                passed &= ok
    finally:
        cluster.stop()
        if args.out:
            json.dump(summary, open(args.out, "w"), indent=2)
    log("PASS" if passed else f"FAIL (logs in {workdir})")
    if passed:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
