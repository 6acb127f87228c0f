"""GRPO in torch: advantages, the clipped surrogate (clip-higher), the KL term, token logprobs,
and that one step moves probability toward the positively-advantaged completions."""

import pytest
import torch

import real.base.env  # noqa: F401
from real.base.config import GRPOConfig
from real.models.logprobs import token_logprobs
from real.train.grpo import GRPO, group_advantages, grpo_loss


def _model(seed=0):
    from real.models.tiny import TinySettings
    from real.models.tiny_net import make_model

    return make_model(TinySettings(layers=1, intermediate=128, seed=seed))


def test_group_advantages():
    a = group_advantages([[1, 0, 0, 1], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    assert a[1] == [0, 0, 0, 0] and a[2] == [0, 0, 0, 0]  # saturated: no signal
    assert a[0] == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert sum(a[3]) == pytest.approx(0, abs=1e-9)
    assert torch.tensor(a[3]).std(unbiased=False) == pytest.approx(1, abs=1e-4)
    b = group_advantages([[1, 0, 0, 0]], std_norm=False)  # Dr.GRPO: just centred
    assert b[0] == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_loss_at_ratio_one_is_minus_mean_advantage():
    lp = torch.log(torch.tensor([[0.5, 0.2, 0.3]]))
    mask = torch.tensor([[False, True, True]])
    adv = torch.tensor([[0.0, 2.0, -1.0]])
    loss, s = grpo_loss(lp, lp.clone(), adv, mask)
    assert loss.item() == pytest.approx(-(2.0 - 1.0) / 2)
    assert s["clip_frac"] == 0


def test_clip_higher_bounds_the_positive_update():
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2, dtype=torch.bool)
    adv = torch.ones(1, 2)
    for eps_high, clipped in ((0.2, True), (0.5, False)):
        new = torch.full((1, 2), 0.3, requires_grad=True)  # ratio e^0.3 = 1.35
        loss, s = grpo_loss(new, old, adv, mask, eps_low=0.2, eps_high=eps_high)
        loss.backward()
        if clipped:  # beyond 1 + eps_high a positive advantage pushes no further
            assert s["clip_frac"] == 1 and torch.all(new.grad == 0)
        else:
            assert s["clip_frac"] == 0 and torch.all(new.grad < 0)
    # negative advantage with ratio below 1 - eps_low: also clipped (no further push down)
    new = torch.full((1, 2), -0.5, requires_grad=True)
    loss, _ = grpo_loss(new, old, -adv, mask, eps_low=0.2, eps_high=0.2)
    loss.backward()
    assert torch.all(new.grad == 0)


def test_kl_term_is_zero_at_the_reference_and_positive_away_from_it():
    lp = torch.log(torch.tensor([[0.5, 0.4]]))
    mask = torch.ones(1, 2, dtype=torch.bool)
    adv = torch.zeros(1, 2)
    loss0, s0 = grpo_loss(lp, lp, adv, mask, ref_logp=lp, kl_coef=0.1)
    assert s0["kl"] == pytest.approx(0) and loss0.item() == pytest.approx(0)
    loss1, s1 = grpo_loss(lp, lp, adv, mask, ref_logp=lp - 0.3, kl_coef=0.1)
    assert s1["kl"] > 0 and loss1.item() == pytest.approx(0.1 * s1["kl"])


def test_token_logprobs_match_a_manual_forward():
    m = _model().eval()
    prompts, comps = [[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14]]
    got = token_logprobs(m, prompts, comps)
    for p, c, g in zip(prompts, comps, got, strict=True):
        with torch.no_grad():
            logits = m(input_ids=torch.tensor([p + c])).logits[0].float()
        lp = torch.log_softmax(logits, -1)
        want = [lp[len(p) - 1 + j, t].item() for j, t in enumerate(c)]
        assert g == pytest.approx(want, abs=1e-5)  # padding in the batch changes nothing


@pytest.mark.parametrize("old", ["engine", "recompute"])
def test_one_step_moves_probability_toward_the_winners(old):
    torch.manual_seed(0)
    m = _model()
    prompt = [20, 21, 14, 22, 32]
    good, bad = [23, 1], [24, 1]
    lp = token_logprobs(m, [prompt, prompt], [good, bad])
    group = [(prompt, good, lp[0], 1), (prompt, bad, lp[1], 0)] * 2
    trainer = GRPO(m, GRPOConfig(lr=1e-2, old_logprobs=old))
    stats = trainer.step([group])
    after = token_logprobs(m, [prompt, prompt], [good, bad])
    assert sum(after[0]) > sum(lp[0]) and sum(after[1]) < sum(lp[1])
    assert stats["tokens_trained"] == 8 and stats["grad_norm"] > 0


def test_saturated_groups_give_no_gradient():
    m = _model()
    before = [p.detach().clone() for p in m.parameters()]
    prompt = [20, 21, 32]
    lp = token_logprobs(m, [prompt], [[23, 1]])[0]
    GRPO(m, GRPOConfig(lr=1e-2)).step([[(prompt, [23, 1], lp, 1)] * 4])
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters(), strict=True))


def test_micro_batches_add_up_to_the_full_batch_update():
    prompt = [20, 21, 14, 22, 32]
    comps = [[23, 1], [24, 25, 1], [26, 1], [23, 27, 28, 1]]
    grads = []
    for micro in (0, 1, 3):
        m = _model(seed=5)
        lp = token_logprobs(m, [prompt] * 4, comps)
        group = [(prompt, c, lp_, r) for c, lp_, r in zip(comps, lp, (1, 0, 0, 1), strict=True)]
        trainer = GRPO(m, GRPOConfig(lr=1e-2, micro_batch=micro, max_grad_norm=1e9))
        trainer.opt.step = lambda: None  # compare the accumulated gradient itself
        trainer.step([group])
        grads.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    assert grads[0].abs().max() > 0
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-7)  # token-mean stays exact
    assert torch.allclose(grads[0], grads[2], rtol=1e-4, atol=1e-7)
