#!/usr/bin/env python3
"""Chat replay against a running `hearth serve` (or any OpenAI-compatible server): S sessions x
T turns through /v1/chat/completions, streamed, each reply sent back in the history, with the
user's reading pause between a session's turns. Prints per turn the prompt tokens, the cached
tokens the server reports, the tokens new to the server, and the time to first token.

  python3 bench/chat_replay_http.py --port 8080 --sessions 1 --turns 8 --gap 1.0
  python3 bench/chat_replay_http.py --sessions 2 --turns 8 --gap 2 \
      --kwargs '{"enable_thinking": false}'     # Qwen3's template with thinking off

At the end it prints the server's next-turn warming counters from /metrics (hearth's), if any.

Standard library only; talks to 127.0.0.1 unless --host says otherwise.
"""
import argparse
import json
import random
import time
import urllib.request

WORDS = ("river mountain quiet engine paper orange window garden silver station winter market "
         "journey little forest lantern memory harbor signal copper meadow thunder library "
         "candle pattern voyage crystal shadow morning bridge compass orchard").split()


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def turn(base, messages, max_tokens, kwargs):
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if kwargs:
        body["chat_template_kwargs"] = kwargs
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.monotonic()
    ttft, content, usage = None, "", None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for c in chunk.get("choices", []):
                piece = c.get("delta", {}).get("content") or ""
                if piece and ttft is None:
                    ttft = time.monotonic() - t0
                content += piece
    return content, usage, (ttft if ttft is not None else time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--sessions", type=int, default=1)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between a session's turns")
    ap.add_argument("--user-words", type=int, default=60)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--kwargs", default="", help="chat_template_kwargs, as JSON")
    a = ap.parse_args()
    kwargs = json.loads(a.kwargs) if a.kwargs else None
    base = f"http://{a.host}:{a.port}"
    rng = random.Random(1234)
    system = "You are a helpful assistant. " + " ".join(sentence(rng, 14) for _ in range(12))
    convs = [[{"role": "system", "content": system}] for _ in range(a.sessions)]
    seen = [0] * a.sessions
    total_new = total_prefilled = 0
    ttfts = {}
    print(f"{'turn':>4} {'session':>7} {'prompt':>7} {'cached':>7} {'new':>5} {'prefill':>7} "
          f"{'ttft_ms':>8}")
    for t in range(1, a.turns + 1):
        for s in range(a.sessions):
            convs[s].append({"role": "user", "content": sentence(rng, a.user_words)})
            content, usage, ttft = turn(base, convs[s], a.max_tokens, kwargs)
            convs[s].append({"role": "assistant", "content": content})
            prompt = usage["prompt_tokens"]
            cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
            new = prompt - seen[s] if t > 1 else prompt
            seen[s] = prompt + usage["completion_tokens"]
            if t > 1:
                total_new += new
                total_prefilled += prompt - cached
            ttfts.setdefault(t, []).append(ttft * 1000)
            print(f"{t:>4} {s:>7} {prompt:>7} {cached:>7} {new:>5} {prompt - cached:>7} "
                  f"{ttft * 1000:>8.1f}", flush=True)
            time.sleep(a.gap / a.sessions)
    if total_new:
        print(f"turns 2-{a.turns}: prefilled / new = {total_prefilled} / {total_new} = "
              f"{total_prefilled / total_new:.3f}")
    print("mean ttft_ms per turn: " +
          " ".join(f"{t}:{sum(v) / len(v):.1f}" for t, v in sorted(ttfts.items())))
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("hearth_warm_") or line.startswith("hearth_draft_"):
                    print(line)
    except OSError:
        pass


if __name__ == "__main__":
    main()
