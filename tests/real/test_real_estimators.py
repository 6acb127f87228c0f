"""The advantage estimators beside GRPO (real/train/grpo.py), with hand-computed
advantages, their config checks, and the TRL path's refusal of what TRL cannot compute."""

import re

import pytest
import torch

import real.base.env  # noqa: F401
from real.base.config import ESTIMATORS, Config, GRPOConfig
from real.models.logprobs import token_logprobs
from real.train.grpo import GRPO, advantages, batch_advantages, rloo_advantages
from sara_sim.core.errors import ParameterError

MIXED, PASS, FAIL = [1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]


def test_grpo_is_group_advantages_and_dr_grpo_only_centres():
    # GRPO: [1,0,0,0] has mean 1/4 and population std sqrt(3)/4: (3/4)/(sqrt(3)/4) = sqrt(3)
    a = advantages([MIXED, PASS], "grpo")
    assert a[0] == pytest.approx([3**0.5, -(3**-0.5), -(3**-0.5), -(3**-0.5)], abs=1e-5)
    assert a[1] == [0, 0, 0, 0]
    assert advantages([MIXED], "grpo", std_norm=False) == advantages([MIXED], "dr-grpo")
    assert advantages([MIXED, PASS, FAIL], "dr-grpo") == [
        [0.75, -0.25, -0.25, -0.25],
        [0, 0, 0, 0],
        [0, 0, 0, 0],
    ]


def test_rloo_subtracts_the_mean_of_the_other_rollouts():
    # [1,1,0,0]: a pass's others average 1/3 -> 2/3; a fail's others 2/3 -> -2/3
    assert rloo_advantages([[1, 1, 0, 0]])[0] == pytest.approx([2 / 3, 2 / 3, -2 / 3, -2 / 3])
    a = advantages([MIXED, PASS, FAIL], "rloo")
    assert a[0] == pytest.approx([1, -1 / 3, -1 / 3, -1 / 3])  # = k/(k-1) x dr-grpo's
    assert a[1] == [0, 0, 0, 0] and a[2] == [0, 0, 0, 0]  # saturated: exactly zero
    assert advantages([[1], [0]], "rloo") == [[0], [0]]  # k = 1: no other rollout, no signal
    assert advantages([[0.5, 0.5]], "rloo") == [[0, 0]]  # std 0


def test_reinforce_pp_normalises_over_the_batch_so_saturated_groups_carry_signal():
    # batch [1,0,0,0, 1,1,1,1, 0,0,0,0]: mean 5/12, population std sqrt(35)/12
    a = advantages([MIXED, PASS, FAIL], "reinforce++")
    up, down = (7 / 12) / (35**0.5 / 12), (-5 / 12) / (35**0.5 / 12)
    assert a[0] == pytest.approx([up, down, down, down], abs=1e-5)
    assert a[1] == pytest.approx([up] * 4, abs=1e-5)  # all-pass: pushed up
    assert a[2] == pytest.approx([down] * 4, abs=1e-5)  # all-fail: pushed down
    (one,), (two,) = advantages([[1], [0]], "reinforce++")  # k = 1: still signal
    assert (one, two) == pytest.approx((1, -1), abs=1e-5)
    assert batch_advantages([PASS, PASS]) == [[0.0] * 4] * 2  # a batch saturated alike: std 0
    assert batch_advantages([]) == []


def test_the_default_step_is_grpo_bit_for_bit():
    """Config without an estimator = grpo; the step's advantages are group_advantages' own."""
    assert GRPOConfig().estimator == "grpo" and Config.from_dict({}).grpo.estimator == "grpo"
    from real.train.grpo import group_advantages

    rewards = [MIXED, PASS, [1, 1, 0, 0]]
    assert advantages(rewards) == group_advantages(rewards)


@pytest.mark.parametrize("estimator", ["grpo", "dr-grpo", "rloo", "reinforce++"])
def test_a_saturated_batch_trains_only_under_reinforce_pp(estimator):
    """One all-pass and one all-fail group: no gradient under the group-baseline estimators,
    a real update under REINFORCE++ (the all-pass answer becomes more likely)."""
    from real.models.tiny import TinySettings
    from real.models.tiny_net import make_model

    m = make_model(TinySettings(layers=1, intermediate=128))
    before = [p.detach().clone() for p in m.parameters()]
    prompt, good, bad = [20, 21, 32], [23, 1], [24, 1]
    lp = token_logprobs(m, [prompt, prompt], [good, bad])
    groups = [[(prompt, good, lp[0], 1)] * 4, [(prompt, bad, lp[1], 0)] * 4]
    stats = GRPO(m, GRPOConfig(lr=1e-2, estimator=estimator)).step(groups)
    moved = not all(torch.equal(a, b) for a, b in zip(before, m.parameters(), strict=True))
    assert moved == (estimator == "reinforce++")
    if moved:
        after = token_logprobs(m, [prompt, prompt], [good, bad])
        assert sum(after[0]) > sum(lp[0]) and stats["grad_norm"] > 0


def test_an_unknown_estimator_is_one_line_naming_the_flag_and_choices():
    with pytest.raises(ParameterError) as e:
        Config.from_flat({"estimator": "ppo"})
    assert str(e.value) == f"--estimator: must be one of {', '.join(ESTIMATORS)}, got 'ppo'"
    with pytest.raises(ParameterError, match="--no-std: applies to --estimator grpo only"):
        GRPOConfig(std_norm=False, estimator="rloo")


@pytest.mark.parametrize("estimator", ["rloo", "reinforce++"])
def test_trl_refuses_what_it_cannot_compute(estimator):
    from real.app.run import check_trl_config

    want = f"--estimator: --trainer trl offers grpo and dr-grpo only, not {estimator}"
    with pytest.raises(ParameterError, match=re.escape(want)):
        check_trl_config(Config(trainer="trl", grpo=GRPOConfig(estimator=estimator)))
    check_trl_config(Config(trainer="trl", grpo=GRPOConfig(estimator="dr-grpo")))  # honoured


@pytest.mark.parametrize(
    ("estimator", "std", "scale"),
    [
        ("grpo", True, "group"),
        ("grpo", False, "none"),
        ("dr-grpo", True, "none"),
    ],
)
def test_trl_computes_grpo_and_dr_grpo_as_we_do(estimator, std, scale, tmp_path):
    """TRL's advantage: rewards - group mean, divided by the group std iff scale_rewards is
    "group" — so dr-grpo (and grpo --no-std) map to "none"."""
    pytest.importorskip("trl")
    from real.trl.run import _grpo_args

    cfg = Config(trainer="trl", k=4, groups=2, grpo=GRPOConfig(estimator=estimator, std_norm=std))
    assert _grpo_args(cfg, tmp_path, 8).scale_rewards == scale
