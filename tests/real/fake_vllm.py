"""A tiny stand-in for vLLM's OpenAI server, for the fault paths only (the main path runs a real
`vllm serve`): deterministic completions from (prompt, seed, child index), and scripted faults —
a request that hangs, an HTTP 500, a connection dropped without an answer, a 400."""

import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expected_tokens(prompt_ids, seed, i):
    """What the fake samples for child i of a request: seed + i names the rollout (as in vLLM)."""
    s = seed + i
    return [2 + (s * 7 + sum(prompt_ids)) % 50, 2 + s % 11]


class FakeVLLM:
    """faults: seed -> list of faults for that seed's successive attempts ('hang', '500',
    'drop', '400', None); 'always500' fails every attempt."""

    def __init__(self, hang_s: float = 3.0):
        self.faults: dict[int, list] = {}
        self.always500: set[int] = set()
        self.hang_s = hang_s
        self.dead = False  # kill(): every request, on any open connection, is dropped
        self.attempts = Counter()  # completion requests seen per seed
        self.answered = Counter()  # completion requests answered with 200 per seed
        self.posts = Counter()  # POST requests per path (the push's control calls included)
        self.slow: dict[int, float] = {}  # seed -> seconds per token of a stream that runs to
        # max_tokens (an abort test's long rollout; a group's choice 0 stays short)
        self.torn: set[int] = set()  # seeds whose next SSE reply stops after one token, unfinished
        self.streamed = Counter()  # tokens written to streams per seed (the server's count)
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _json(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/v1/models":
                    card = {"id": "fake", "root": "/nonexistent/fake", "max_model_len": 64}
                    return self._json(200, {"data": [card]})
                self._json(404, {"error": "no"})

            def do_POST(self):
                if fake.dead:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                body = json.loads(
                    self.rfile.read(int(self.headers.get("Content-Length", 0)) or b"{}")
                )
                with fake.lock:
                    fake.posts[self.path.split("?")[0]] += 1
                if self.path == "/tokenize":
                    return self._json(200, {"tokens": [ord(c) % 90 for c in body["prompt"]]})
                if self.path != "/v1/completions":
                    return self._json(404, {"error": "no"})
                seed = body.get("seed")
                with fake.lock:
                    fake.attempts[seed] += 1
                    script = fake.faults.get(seed, [])
                    fault = script.pop(0) if script else None
                    if seed in fake.always500 or "all" in fake.always500:
                        fault = "500"
                if fault == "hang":
                    time.sleep(fake.hang_s)  # the client has given up by now
                elif fault == "500":
                    return self._json(500, {"error": "engine dead"})
                elif fault == "400":
                    return self._json(400, {"error": "prompt too long"})
                elif fault == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if body.get("stream"):
                    return self._sse(body, seed)
                choices = []
                for i in range(body["n"]):
                    toks = expected_tokens(body["prompt"], seed, i)
                    lps = {"token_logprobs": [-0.5] * len(toks), "tokens": []}
                    text = "".join(chr(48 + t % 10) for t in toks)
                    choices.append(
                        {"index": i, "text": text, "token_ids": toks, "logprobs": lps}
                        | {"finish_reason": "stop"}
                    )
                with fake.lock:
                    fake.answered[seed] += 1
                try:
                    self._json(200, {"choices": choices})
                except OSError:  # the client hung up on a hanging request
                    pass

            def _sse(self, body, seed):
                """stream=True: one server-sent chunk per token, as vLLM streams a completion; the
                n choices' chunks interleaved (told apart by index), each ending on its own."""
                n = body.get("n", 1)
                toks = [expected_tokens(body["prompt"], seed, i) for i in range(n)]
                delay = fake.slow.get(seed)
                if delay is not None:  # runs to max_tokens; in a group, choice 0 still ends at
                    # once (a group finished in part)
                    long = [2 + j % 50 for j in range(body["max_tokens"])]
                    toks = [long if i or n == 1 else t for i, t in enumerate(toks)]
                with fake.lock:
                    torn = seed in fake.torn
                    fake.torn.discard(seed)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")  # the body ends when the socket does
                self.end_headers()
                self.close_connection = True
                steps = 1 if torn else max(len(t) for t in toks)
                try:
                    for j in range(steps):
                        for i, ts in enumerate(toks):
                            if j >= len(ts):
                                continue
                            t, last = ts[j], j == len(ts) - 1
                            choice = {"index": i, "text": chr(48 + t % 10), "token_ids": [t]}
                            choice |= {"logprobs": {"token_logprobs": [-0.5]}}
                            choice["finish_reason"] = "stop" if last and not torn else None
                            chunk = json.dumps({"choices": [choice]})
                            self.wfile.write(f"data: {chunk}\n\n".encode())
                            self.wfile.flush()
                            with fake.lock:
                                fake.streamed[seed] += 1
                        if delay:
                            time.sleep(delay)
                    if not torn:
                        self.wfile.write(b"data: [DONE]\n\n")
                    else:  # let the client read the token before the connection goes
                        time.sleep(0.2)
                except OSError:  # the client closed the connection: the request stops here
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def kill(self):
        """A crashed server: new connections refused, open keep-alive connections dropped."""
        self.dead = True
        self.close()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
