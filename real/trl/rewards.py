"""The user's reward functions inside `real.trl.adapter.SaraRollout`, and the train / eval
datasets as the adapter reads them (rows found by their prompt).

Every rollout is scored once, as it is generated: the functions get TRL's keywords (`prompts`,
`completions`, `completion_ids`, `trainer_state`, `log_metric`, ...) plus every dataset column of
the rollout's row and `sara_prompt`.  Their weighted sum (TRL's `reward_weights`) is what SARA
decides on: a rollout *passes* iff it is >= `threshold` (None and NaN count as 0, as in TRL's
nansum).  `log_metric` calls made inside our scoring are held in `pending` until the adapter's
pass-through reward function hands them to TRL."""

import json
import math

from sara_sim.core.errors import ParameterError

from .backends import check_reward_values


def prompt_key(prompt) -> str:
    """Dataset rows are found by their prompt (TRL passes the prompt, not the row index)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


def _first_rows(dataset) -> dict:
    out = {}
    for i, p in enumerate(dataset["prompt"] if dataset is not None else []):
        out.setdefault(prompt_key(p), i)
    return out


class Datasets:
    """The train dataset (its size is what `PromptSource` cycles over) and TRL's eval rows."""

    def __init__(self, train, eval_dataset=None):
        if not hasattr(train, "__getitem__") or "prompt" not in train.column_names:
            raise ParameterError(
                "train_dataset", "needs a map-style datasets.Dataset with a 'prompt' column"
            )
        self.train, self.eval = train, eval_dataset
        self.columns = [c for c in train.column_names if c != "prompt"]
        self.size = len(train)
        self.row_of, self.eval_row_of = _first_rows(train), _first_rows(eval_dataset)

    def row(self, prompt) -> int:
        row = self.row_of.get(prompt_key(prompt))
        if row is None:
            raise RuntimeError(f"prompt {str(prompt)[:60]!r} is not in the train dataset")
        return row

    def record(self, prompt) -> dict:
        """An eval batch's row: from the eval dataset when it has the prompt, else the train's."""
        hit = self.eval_row_of.get(prompt_key(prompt))
        return self.eval[hit] if hit is not None else self.train[self.row(prompt)]


class Rewards:
    """The user's reward functions with TRL's weights and the pass threshold."""

    def __init__(self, funcs, weights, threshold):
        if not (isinstance(threshold, int | float) and math.isfinite(threshold)):
            raise ParameterError("threshold", f"must be a finite number, got {threshold!r}")
        self.funcs, self.weights, self.threshold = funcs, weights, float(threshold)
        self.pending = []  # log_metric calls made by the functions inside our scoring

    def check_on(self, dataset) -> None:
        """Call each function once on two dataset rows with empty completions, so one that
        returns non-numbers fails here, before any trainer exists.  A function that raises on an
        empty completion is not judged here; the same check runs on every real rollout."""
        rows = [dataset[i] for i in range(min(2, len(dataset)))]
        chat = not isinstance(rows[0]["prompt"], str)
        empty = [[{"role": "assistant", "content": ""}] if chat else "" for _ in rows]
        for f in self.funcs:
            try:
                vals = self.call(f, rows, empty, [[] for _ in rows], state=None)
            except ParameterError:
                raise
            except Exception:  # judged on the first real rollouts instead
                continue
            check_reward_values(f, vals, len(rows))

    def score(self, trainer, records, completion_ids) -> list[list]:
        """Every function on these rollouts, with their rows' dataset columns: a list of
        per-function scores per rollout."""
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        chat = not isinstance(records[0]["prompt"], str)
        completions = [[{"role": "assistant", "content": t}] for t in texts] if chat else texts
        per_func = []
        for f in self.funcs:
            vals = self.call(f, records, completions, completion_ids, trainer.state)
            per_func.append(check_reward_values(f, vals, len(records)))
        return [list(s) for s in zip(*per_func)]

    def call(self, f, records, completions, completion_ids, state):
        prompts = [r["prompt"] for r in records]
        kw = {c: [r[c] for r in records] for c in records[0] if c != "prompt"}
        kw.update(sara_prompt=prompts, trainer_state=state, log_extra=lambda *a: None)
        kw["log_metric"] = lambda name, value: self.pending.append((name, value))
        return f(prompts=prompts, completions=completions, completion_ids=completion_ids, **kw)

    def passed(self, scores) -> int:
        """1 iff the weighted sum of one rollout's scores reaches the threshold."""
        total = sum(w * x for w, x in zip(self.weights, scores) if x is not None and x == x)
        return int(total >= self.threshold)

    def passthrough(self, j, f, step_metrics):
        """The reward function TRL calls in place of `f`: it hands back the scores computed as
        the rollouts were drawn (TRL's `sara_reward_j` column).  The first one also logs
        `step_metrics()` (a dict, or None: nothing to log) under `sara/` and the held
        `log_metric` calls of the user's functions."""
        key = f"sara_reward_{j}"

        def reward(prompts, completions, log_metric=None, **kw):
            if key not in kw:
                raise RuntimeError("pass-through rewards need SaraRollout as rollout_func")
            metrics = step_metrics() if j == 0 and log_metric is not None else None
            if metrics is not None:
                for name, v in metrics.items():
                    if isinstance(v, int | float) and not isinstance(v, bool):  # None: undefined
                        log_metric(f"sara/{name}", float(v))
                for name, v in self.pending:
                    log_metric(name, v)
            if j == 0:
                self.pending = []
            return kw[key]

        reward.__name__ = getattr(f, "__name__", f"reward_{j}")
        return reward
