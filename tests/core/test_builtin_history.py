"""The DeepScaleR histories shipped as package data: the file is the one described in
sara_sim/data/README.md (its facts recomputed here), `history:deepscaler` / `--history
deepscaler` name it from any folder, the name is reserved (a file called `deepscaler` is
`./deepscaler`), and a bad name or path is one line."""

import hashlib
import json

import numpy as np
import pytest

from sara_sim.cli.app import main
from sara_sim.core.difficulty import (
    BUILTIN_HISTORIES,
    builtin_history,
    history_file,
    load_history,
    parse_law,
)
from sara_sim.core.errors import ParameterError

# sha256 of deepscaler_pass_history.csv as converted (sara_sim/data/README.md): a changed byte fails
SHA256 = "dcea338b9cc0afc8988cdd540da7766447fc1950081dbead3d4606845e592f19"


def test_the_packaged_file_is_the_documented_one():
    path = builtin_history("deepscaler")
    assert path.name == BUILTIN_HISTORIES["deepscaler"] and path.parent.name == "data"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256
    df = load_history("deepscaler")
    assert len(df) == 32029 and df["prompt_id"].nunique() == 605
    assert (df["prompt_id"] % 2 == 0).all() and (df["samples"] == 8).all()
    visits = df.groupby("prompt_id")["epoch"].count()
    assert (visits.min(), visits.max(), df["epoch"].max()) == (44, 57, 56)


def _shares(df, epoch):
    c = df.loc[df["epoch"] == epoch, "correct"]
    return [round(100 * float(x), 1) for x in ((c == 0).mean(), (c == 8).mean())]


def test_the_readme_facts():
    """The measured facts in sara_sim/data/README.md, recomputed from the file."""
    df = load_history("deepscaler").sort_values(["prompt_id", "epoch"])
    per_epoch = df.groupby("epoch")["prompt_id"].count()
    assert per_epoch[per_epoch == 605].index.max() == 43
    assert (per_epoch[50], per_epoch[56]) == (540, 1)
    assert _shares(df, 0) == [36.4, 7.9] and _shares(df, 43) == [26.4, 22.0]
    saturated = (df["correct"] == 0) | (df["correct"] == df["samples"])
    nxt = saturated.groupby(df["prompt_id"]).shift(-1)
    seen = nxt.notna()
    again = nxt[seen & saturated].astype(bool).mean()
    becomes = nxt[seen & ~saturated].astype(bool).mean()
    assert (round(100 * again, 1), round(100 * becomes, 1)) == (77.1, 22.2)


def test_name_and_path_give_the_same_law():
    by_name = parse_law("history:deepscaler", epochs="0")
    by_path = parse_law(f"history:{builtin_history('deepscaler')}", epochs="0")
    i, j = np.meshgrid(np.arange(9), np.arange(9))
    np.testing.assert_array_equal(by_name.log_moment(i, j), by_path.log_moment(i, j))
    assert str(by_name) == "history:deepscaler[epochs 0-0]"


def test_the_name_is_reserved_and_a_path_still_works(tmp_path, monkeypatch):
    """A file called `deepscaler` in the working folder does not shadow the built-in name;
    `./deepscaler` (or any path) reads the user's own file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deepscaler").write_text("prompt_id,epoch,correct,samples\n0,0,1,4\n1,0,3,4\n")
    assert len(load_history("deepscaler")) == 32029
    own = load_history("./deepscaler")
    assert own["samples"].tolist() == [4, 4]
    assert parse_law("history:./deepscaler").max_k == 4
    assert history_file(tmp_path / "deepscaler") == tmp_path / "deepscaler"  # a Path is a path


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["theory", "--difficulty", "history:x", "--k", "8", "--tau-low", ".5"], "--difficulty"),
        (["replay", "--history", "DeepScaleR", "--epochs", "0-1"], "--history"),
        (["figures", "--out", "OUT", "--history", "nope"], "--history"),
    ],
)
def test_a_bad_name_is_one_line_naming_the_built_ins(argv, flag, capsys, tmp_path):
    argv = [str(tmp_path / "figs") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1, out.err
    assert flag in lines[0] and "history file not found" in lines[0]
    assert "built-in histories: deepscaler" in lines[0]
    assert not (tmp_path / "figs").exists()  # refused before any figure work


def test_the_built_in_name_on_the_command_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no checkout beside: the name alone finds the data
    argv = ["theory", "--difficulty", "history:deepscaler", "--epoch", "0", "--k", "8"]
    assert main([*argv, "--tau-low", "0.5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["difficulty"] == "history:deepscaler"
    # README: DS 14.36, SARA at tau_low 0.5 13.77 rollouts per effective group at epoch 0
    assert round(got["ds_cost_per_effective_group"], 2) == 14.36
    assert round(got["cost_per_effective_group"], 2) == 13.77
    with pytest.raises(ParameterError, match="directory"):
        load_history(str(tmp_path))
