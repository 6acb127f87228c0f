"""Fault paths, with a fake server (the real path runs a real vLLM server: test_collect.py): a
server that dies in the middle of a prompt, and a malformed reply.  The prompt must leave verl's
buffer cleanly — a failure with none of its rollouts left in TransferQueue, which verl's replay
buffer evicts and refills — and SARA books it as lost, not as a decision."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import ray

from real.verl import toy

pytestmark = pytest.mark.integration
N = 3


class FakeServer:
    """Answers `good` completions (two tokens), then fails: "malformed" answers 200 without
    token ids, "dies" shuts the server down (connections refused from then on)."""

    def __init__(self, fault, good):
        owner = self
        self.fault, self.good, self.answered = fault, good, 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if owner.answered >= owner.good and owner.fault == "dies":
                    threading.Thread(target=owner.close).start()
                    self.close_connection = True
                    return  # no answer: the connection drops, then nothing listens
                ok = owner.answered < owner.good
                owner.answered += 1
                body = {"choices": [{"token_ids": [5, 6], "finish_reason": "stop"}]} if ok else {}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        """Stop serving and close the listening socket: connections are refused from then on."""
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("fault", ["dies", "malformed"])
def test_a_failed_prompt_leaves_cleanly(tiny_dir, dataset, ray_session, fault):
    fake = FakeServer(fault, good=2)  # the first prompt's probe gets 2 answers, then the fault
    try:
        lines = [*toy.sara_lines("sara"), *toy.TOY_LINES, f"data.train_batch_size={N}"]
        cfg = toy.verl_config(
            str(tiny_dir), dataset, [*lines, "algorithm.filter_groups.enable=true"]
        )
        tr = toy.CollectTrainer(cfg, fake.url, str(tiny_dir))
        t = tr.trainer
        t.global_steps = 1
        t.prepare_step()  # N prompts submitted: every one of them fails
        buf = t.replay_buffer
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            buf._sync_metadata_from_transfer_queue()
            if len(buf.failure_keys["train"]) == N:
                break
            time.sleep(0.5)
        failed = buf.failure_keys["train"]
        assert len(failed) == N
        assert not [k for k in buf.partitions["train"] if k.split("_")[0] in failed]
        evict = buf._terminal_eviction_reasons(1, "train")[2]  # verl evicts and refills them
        assert evict == failed
        m = ray.get(tr.manager.state.step_metrics.remote(1, []))
        assert m["sara/lost"] == N and m["sara/abandoned"] == 0
    finally:
        fake.close()
