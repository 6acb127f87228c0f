"""The tiny model in verl, for the tests and the benchmark: its arithmetic prompts as a verl
dataset, its reward as a verl reward function, verl's config for it, and a trainer that runs
only verl's collection side (no GPU here: verl's actor, rollout replicas and weight sync need one).

``CollectTrainer`` is verl's ``PPOTrainerSync`` built as verl builds it up to what needs a GPU:
verl's constructor (the replay buffer named by the config: ``SaraReplayBuffer``, its checks, the
checkpoint callback), its tokenizer and dataloader, verl's ``RewardLoopManager`` (rule-based reward
workers), and the agent-loop manager made by verl's own ``TaskRunnerV1.init_agent_loop_manager``
from the config key — with a ``ServerClient`` to a vLLM server as the LLM client.  A step is
verl's ``prepare_step`` (one train batch submitted) then ``replay_buffer.sample`` (evict, refill,
select), as ``PPOTrainer._step_once`` begins; the batch is then cleared as ``fit`` clears it."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np

from real.tasks.arithmetic import ArithmeticTask, extract_integer

CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # the bare problem text
AGENT_LOOP = "sara_toy_single_turn"


def _single_turn():
    from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

    class ToySingleTurnAgentLoop(SingleTurnAgentLoop):
        """verl's single-turn agent loop with its default prompt builder: verl picks a builder by
        the model's type, and its Qwen builder needs a newline token, which the tiny model's
        character tokenizer lacks; the default builder renders the chat template as it is."""

        def __init__(self, *args, **kwargs):
            kwargs["hf_model_type"] = None
            SingleTurnAgentLoop.__init__(self, *args, **kwargs)

    return ToySingleTurnAgentLoop


def __getattr__(name):  # verl instantiates the loop by its dotted name in its worker processes
    if name == "ToySingleTurnAgentLoop":
        return _single_turn()
    raise AttributeError(name)


# ---------------------------------------------------------------- the main environment
# verl's environment has no vLLM: the tiny model is built and served by the project's main
# environment (.venv of this checkout, or the python named by SARA_MAIN_PYTHON), over 127.0.0.1.
ROOT = Path(__file__).resolve().parents[2]


def main_python() -> Path:
    return Path(os.environ.get("SARA_MAIN_PYTHON", ROOT / ".venv" / "bin" / "python"))


def main_cli(*args, **kw) -> subprocess.CompletedProcess:
    """`sara-real ARGS` run by the main environment (checked; output captured as text)."""
    kw = {"check": True, "capture_output": True, "text": True} | kw
    return subprocess.run([str(main_python()), "-m", "real.app.cli", *args], cwd=ROOT, **kw)


def main_tiny(*args) -> Path:
    """The tiny model's folder, built (or found in the project cache) by `make-tiny ARGS`."""
    return Path(json.loads(main_cli("make-tiny", *args).stdout.strip().splitlines()[-1])["model"])


def main_server(model_dir, port: int, log) -> subprocess.Popen:
    """`sara-real serve` of `model_dir` on 127.0.0.1:`port` by the main environment, in its own
    session (``real.sampling.serve.stop_server`` stops its process group); output to `log`."""
    cmd = [str(main_python()), "-m", "real.app.cli", "serve", "--model", str(model_dir)]
    cmd += ["--port", str(port), "--max-model-len", "256"]
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def agent_loop_file(folder) -> str:
    """verl's agent-loop registry file naming the toy loop (agent.agent_loop_config_path)."""
    path = os.path.join(folder, "sara_toy_agent_loop.yaml")
    with open(path, "w") as f:
        f.write(f"- name: {AGENT_LOOP}\n  _target_: real.verl.toy.ToySingleTurnAgentLoop\n")
    return path


def write_dataset(path, size: int, seed: int = 0) -> str:
    """`size` arithmetic problems (the task's uids 0 .. size - 1) as a verl RL parquet."""
    import pandas as pd

    task = ArithmeticTask(seed=seed, size=size)
    rows = []
    for i in range(size):
        p = task.problem(i)
        rows.append(
            {
                "data_source": "sara/arithmetic",
                "prompt": [{"role": "user", "content": p.prompt}],
                "ability": "arithmetic",
                "reward_model": {"style": "rule", "ground_truth": p.answer},
                "extra_info": {"index": i},
            }
        )
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl's reward function for the task: 1.0 iff the completion's integer is the answer."""
    return float(extract_integer(solution_str) == str(ground_truth))


def verl_config(model_dir, train_path, overrides=()):
    """verl's ppo_trainer config for the tiny model on CPU (no model is loaded by it); the toy
    agent loop's registry file goes beside the train file."""
    base = [
        f"actor_rollout_ref.model.path={model_dir}",
        f"+actor_rollout_ref.model.custom_chat_template={CHAT_TEMPLATE!r}",
        f"data.train_files={train_path}",
        f"data.val_files={train_path}",
        "data.max_prompt_length=32",
        "data.max_response_length=8",
        "data.dataloader_num_workers=0",
        "data.return_raw_chat=true",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.n=8",
        "actor_rollout_ref.rollout.response_length=8",
        "actor_rollout_ref.rollout.prompt_length=32",
        "actor_rollout_ref.rollout.temperature=1.0",
        "actor_rollout_ref.rollout.agent.num_workers=2",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_LOOP}",
        "actor_rollout_ref.rollout.agent.agent_loop_config_path="
        + agent_loop_file(os.path.dirname(os.path.abspath(train_path))),
        "reward.num_workers=1",
        "reward.custom_reward_function.path=pkg://real.verl.toy",
        "reward.custom_reward_function.name=compute_score",
        "trainer.logger=[console]",
        "trainer.n_gpus_per_node=0",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    ]
    return compose(base + list(overrides))


def compose(overrides):
    """verl's ppo_trainer config with `overrides` (Hydra's command-line syntax), composed as
    verl's main_ppo composes its command line: a key verl's config lacks needs a `+`."""
    import verl.trainer.main_ppo as main_ppo
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    folder = os.path.join(os.path.dirname(main_ppo.__file__), "config")
    with initialize_config_dir(config_dir=folder, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def sara_lines(strategy: str = "sara"):
    """The five Hydra lines that add SARA to a verl run (docs/verl.md)."""
    return [
        "+actor_rollout_ref.rollout.agent.agent_loop_manager_class=real.verl.SaraAgentLoopManager",
        "trainer.v1.sampler.custom_sampler.path=pkg://real.verl.buffer",
        "trainer.v1.sampler.custom_sampler.name=SaraReplayBuffer",
        "trainer.checkpoint_callback_class=real.verl.SaraCheckpoint",
        f"+trainer.v1.sampler.sampler_kwargs.strategy={strategy}",
    ]


TOY_LINES = ["+trainer.v1.sampler.sampler_kwargs.poll_interval=0.1"]  # a 2-core box: no 2 s naps


def start_ray(tmp_dir=None):
    """A local Ray for the tests: 6 logical CPUs (each actor reserves one to be placed:
    TransferQueue's controller and storage unit, two agent-loop workers, one reward worker; this
    machine has 2 cores, Ray would see 2 and hang waiting).  Its folder: `tmp_dir`, else
    $RAY_TMPDIR, else a fresh short one in /tmp (Ray's socket paths must stay under 108 bytes)."""
    import tempfile

    import ray

    os.environ["RAY_OVERRIDE_RESOURCES"] = '{"CPU":6}'
    folder = tmp_dir or os.environ.get("RAY_TMPDIR") or tempfile.mkdtemp(prefix="sara-ray-")
    os.makedirs(folder, exist_ok=True)
    ray.init(
        num_cpus=6,
        include_dashboard=False,
        _temp_dir=os.path.abspath(folder),
        runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}},
    )


class CollectTrainer:
    """verl's sync trainer up to what needs a GPU, driving real collection (module docstring)."""

    def __init__(self, config, url: str, model: str, resume_from=None):
        import transfer_queue as tq
        from omegaconf import open_dict
        from verl.experimental.reward_loop.reward_loop import RewardLoopManager
        from verl.trainer.main_ppo import TaskRunnerV1
        from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

        from real.verl.client import ServerClient

        with open_dict(config):
            config.transfer_queue.enable = True
        tq.init(config.transfer_queue)
        trainer = PPOTrainerSync.__new__(PPOTrainerSync)
        trainer.global_steps = 0
        self.trainer = trainer
        trainer.__init__(config)  # verl's: replay buffer (ours, checked), checkpoint callback
        trainer._init_tokenizer()
        trainer._init_dataloader()
        if resume_from is not None:
            self.resume(resume_from)
        trainer.reward_loop_manager = RewardLoopManager(config=config)
        client = ServerClient(config, url, model)
        trainer.get_llm_client = lambda: client
        trainer.get_teacher_client = lambda: None
        runner = TaskRunnerV1.__ray_actor_class__()
        runner.config, runner.trainer = config, trainer
        TaskRunnerV1.__ray_actor_class__.init_agent_loop_manager(runner)
        trainer.agent_loop_manager = runner.agent_loop_manager
        self.manager = runner.agent_loop_manager

    def step(self):
        """One verl step's collection: (metrics, groups {uid: [(prompt, reward)] * n})."""
        import transfer_queue as tq

        t = self.trainer
        t.global_steps += 1
        t.prepare_step()
        size = t.config.data.train_batch_size
        batch, metrics = t.replay_buffer.sample(t.global_steps, "train", size)
        fields = ["rm_scores", "prompts"]
        data = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=fields)
        groups = {}
        for key, scores, prompt in zip(batch.keys, data["rm_scores"], data["prompts"]):
            uid = key.split("_")[0]
            reward = float(np.asarray(scores).sum())
            groups.setdefault(uid, []).append((tuple(prompt.tolist()), reward))
        tq.kv_clear(keys=batch.keys, partition_id=batch.partition_id)
        return metrics, groups

    def save(self, folder):
        """What verl's ``_save_checkpoint`` does beside the model: the folder, the dataloader's
        state, the tracker file, then the checkpoint callback."""
        import torch

        t = self.trainer
        path = os.path.join(folder, f"global_step_{t.global_steps}")
        os.makedirs(path, exist_ok=True)
        torch.save(t.train_dataloader.state_dict(), os.path.join(path, "data.pt"))
        with open(os.path.join(folder, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(str(t.global_steps))
        t.checkpoint_callback.on_save(trainer=t, global_step=t.global_steps, checkpoint_dir=path)
        return path

    def resume(self, path):
        """What verl's ``_load_checkpoint`` does beside the model: the step and the dataloader."""
        import torch

        t = self.trainer
        t.global_steps = int(path.rstrip("/").split("global_step_")[-1])
        t.train_dataloader.load_state_dict(torch.load(os.path.join(path, "data.pt")))


def stop_ray():
    import ray
    import transfer_queue as tq

    try:
        tq.close()
    finally:
        ray.shutdown()
