"""docs/verl.md's verl lines — the five that add SARA, and the GPU recipe — cannot run here (verl
trains on GPUs only), so they are composed into verl's own ppo_trainer config by Hydra, as
verl's main_ppo composes its command line: a key verl's config lacks, unless added with `+`,
fails; the composed config then passes the plug-in's own check."""

import shlex

from doc_code import VERL_MAIN, documented

from real.verl import toy
from real.verl.settings import check_config


def _lines():
    """(the five plug-in lines, the recipe's overrides) as docs/verl.md shows them."""
    lines = [line for _, line in documented("verl", check_only=True)]
    recipes = [shlex.split(x) for x in lines if shlex.split(x)[:3] == VERL_MAIN]
    assert len(recipes) == 1
    return [x for x in lines if not x.startswith(VERL_MAIN[0])], recipes[0][3:]


def test_the_five_lines_are_the_plugins_own_and_compose_into_verls_config(tmp_path):
    five, _ = _lines()
    assert five == toy.sara_lines("sara")
    data = str(tmp_path / "train.parquet")
    cfg = toy.verl_config(str(tmp_path / "model"), data, [*five, "data.gen_batch_size=1"])
    assert check_config(cfg).strategy == "sara"


def test_the_gpu_recipe_composes_into_verls_config_and_passes_the_plugins_check(tmp_path):
    _, overrides = _lines()
    overrides = [x.replace("$DATA", str(tmp_path)) for x in overrides]
    assert not [x for x in overrides if "$" in x]
    cfg = toy.compose(overrides)
    s = check_config(cfg)
    assert (s.strategy, s.k, s.groups, s.options["tau_low"]) == ("sara", 8, 32, 0.2)
