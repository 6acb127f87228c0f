"""A full disk while the figures are saved (a real tmpfs): one line naming the file, exit 1, and
every file already there still whole (each is replaced atomically, never cut off)."""

import pytest

from paper_figs.__main__ import main as figs_main
from sara_sim.cli.app import main as sim_main


@pytest.mark.parametrize("main,prog", [(sim_main, "sara-sim"), (figs_main, "paper_figs")])
def test_figures_on_a_full_disk(main, prog, tmpfs, capsys):
    disk = tmpfs.mount("1m")
    out = disk / "figs"
    assert main(["figures", "--out", str(out), "--only", "1"][prog == "paper_figs" :]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"fig1_p_eff.png", "fig1_p_eff.csv", "fig1_p_eff.txt"}
    capsys.readouterr()

    tmpfs.fill(disk, leave=64 * 1024)  # less than the PNG (~230 KB)
    again = ["figures", "--out", str(out), "--only", "1", "--overwrite"][prog == "paper_figs" :]
    assert main(again) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"{prog}: error: cannot write {out / 'fig1_p_eff.png'}: "), err
    assert "No space left on device" in err[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # whole, no temp file
