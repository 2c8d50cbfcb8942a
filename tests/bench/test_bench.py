"""`lackjail bench`: every figure the goals need is printed, goals are judged from the same
run, and a missing anchor says so instead of showing a number. Nothing here asserts a speed."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lackjail.bench import anchors
from lackjail.bench import figures as bench
from lackjail.bench.goals import Goal, goals
from lackjail.bench.programs import fresh_program

ROOT = Path(__file__).resolve().parents[2]

# Every figure the goals are judged on; each is a number, or None with a reason in "unavailable".
GOAL_FIGURES = [
    bench.FRESH_B2B,
    bench.FRESH_SPARE,
    bench.FRESH_SPARE_P99,
    bench.REUSE,
    bench.SESSION,
    bench.TOOL,
    bench.VALIDATE_IDLE,
    bench.TPUT_FRESH,
    bench.TPUT_REUSE,
    bench.COLD,
    bench.FAULTS,
    bench.FAULTS_READY,
    bench.ZYGOTE_START,
    bench.MONTY,
    bench.MONTY_CALL,
    bench.LACKPY,
    bench.MAP,
    bench.BATCH,
    bench.LEAN_FORK_RPS,
    bench.LEAN_WARM_CHILD,
    bench.LEAN_REUSE_RPS,
    bench.LEAN_REUSE_US,
    bench.CLI_RUN,
    bench.BARE_START,
    bench.VALIDATE_NEW,
    bench.CHECK_NEW,
]


def run_bench(*args):
    return subprocess.run(
        [sys.executable, "-m", "lackjail.cli", "bench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture(scope="module")
def bench_json(require_nsjail):
    proc = run_bench("-n", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_bench_json_has_every_figure_the_goals_need(bench_json):
    figures, unavailable = bench_json["figures"], bench_json["unavailable"]
    assert figures["isolation"] == "nsjail"
    for name in GOAL_FIGURES:
        value = figures[name]
        if value is None:
            assert unavailable[name], name  # a reason, never a silent gap
        else:
            assert isinstance(value, (int, float)) and value > 0, name
    for name in (bench.FRESH_B2B, bench.FRESH_SPARE, bench.REUSE, bench.TPUT_FRESH, bench.COLD):
        assert figures[name] is not None, name  # the jail's own figures are always measured
    # the ready spare has at least forked: the copy-on-write faults of a fresh child are counted
    assert figures[bench.FAULTS_READY] > 0 and figures[bench.FAULTS] > 0


def test_bench_has_the_landlock_levels_figures_beside_nsjails(bench_json):
    """Fresh and reuse at the landlock level: numbers where Landlock runs, else the reason."""
    from lackjail.worker import landlock

    figures, unavailable = bench_json["figures"], bench_json["unavailable"]
    names = [
        bench.LANDLOCK_COLD,
        bench.LANDLOCK_FRESH,
        bench.LANDLOCK_TPUT_FRESH,
        bench.LANDLOCK_REUSE,
        bench.LANDLOCK_TPUT_REUSE,
    ]
    for name in names:
        if landlock.abi_version() >= 1:
            assert isinstance(figures[name], (int, float)) and figures[name] > 0, name
        else:
            assert figures[name] is None and "Landlock" in unavailable[name], name


def test_bench_says_where_the_time_goes(bench_json):
    """Per run: wall time and CPU in the controller, the zygotes and the children."""
    figures, unavailable = bench_json["figures"], bench_json["unavailable"]
    for mode in ("fresh", "reuse"):
        parts = {k: v for k, v in figures.items() if k.startswith(f"{mode} back to back: ")}
        assert len(parts) == 5, parts
        for name, value in parts.items():
            assert (value is not None and value >= 0) or unavailable[name], name
    controller = figures["fresh back to back: CPU per run, controller (us)"]
    assert controller is None or controller > 0  # rusage counts microseconds: never zero


def test_goals_not_met_say_where_their_time_goes_from_the_same_run(bench_json):
    figures = bench_json["figures"]
    goals = {g["figure"]: g for g in bench_json["goals"]}
    assert figures[bench.HANDOFF] > 0  # the floor of a run and of a tool call, measured here
    assert figures[bench.VALIDATE_IDLE] > 0 and figures[bench.VALIDATE] > 0
    for name in ("fresh throughput, 2 workers", "reuse p50", "cold start to first result"):
        goal = goals[name]
        assert goal["met"] or goal["where"], name
    cpu = [
        figures[f"fresh back to back: CPU per run, {p} (us)"]
        for p in ("controller", "zygotes", "children")
    ]
    if None not in cpu:
        where = goals["fresh throughput, 2 workers"]["where"]
        assert f"{sum(cpu):,.0f} us of CPU per fresh run" in where


def test_where_the_time_goes_is_worded_from_the_figures():
    from lackjail.cli.bench import _markdown

    figures = bench.Figures()
    figures.update(
        {
            bench.TPUT_FRESH: 700.0,
            bench.HANDOFF: 80.0,
            bench.REUSE: 200.0,
            bench.FRESH_SPARE: 900.0,
            bench.VALIDATE: 16.0,
            bench.VALIDATE_IDLE: 160.0,
            bench.TOOL: 60.0,
            bench.MONTY_CALL: 70.0,
            "fresh back to back: CPU per run, controller (us)": 400.0,
            "fresh back to back: CPU per run, zygotes (us)": 500.0,
            "fresh back to back: CPU per run, children (us)": 1100.0,
            "reuse back to back: CPU per run, controller (us)": 120.0,
            "reuse back to back: CPU per run, zygotes (us)": 0.0,
            "reuse back to back: CPU per run, children (us)": 90.0,
        }
    )
    judged = {g.figure: g for g in goals(figures)}
    cpus = os.cpu_count()
    tput = judged["fresh throughput, 2 workers"].where
    assert tput.startswith(f"2,000 us of CPU per fresh run on {cpus} cores")
    assert f"a ceiling of {cpus * 1e6 / 2000:,.0f} runs/s" in tput
    assert "a pipe round trip: 80 us here" in judged["reuse p50"].where
    assert (
        "(about 8,333 runs/s at most from one process)"
        in judged["reuse throughput, 2 workers"].where
    )
    assert "120 us in the controller and 90 us in the child" in judged["reuse p50"].where
    spare = judged["fresh p50, spares ready"].where
    assert "400 us of the controller's CPU" in spare
    assert "160 us after 10 ms idle against 16 us back to back (10.0x)" in spare
    call = judged["host tool call vs monty's external call"].where
    assert "a pipe round trip across CPUs: 80 us here" in call
    assert "run inline on a relay thread that the run's caller watches" in call
    assert judged["cold start to first result"].where == ""  # no figure, no words
    table = _markdown(figures, list(judged.values()))
    assert "Where the time goes, for each goal not met" in table
    assert f"- reuse p50: {judged['reuse p50'].where}." in table


def test_goals_are_ratios_of_figures_from_the_same_run(bench_json):
    figures = bench_json["figures"]
    goals = {g["figure"]: g for g in bench_json["goals"]}
    spare = goals["fresh p50, spares ready"]
    assert spare["measured"] == figures[bench.FRESH_SPARE]
    assert spare["ratio"] == pytest.approx(figures[bench.FRESH_SPARE] / 250)
    assert spare["met"] == (spare["ratio"] <= 1.0)
    p99 = goals["fresh p99, spares ready"]
    assert p99["target"] == pytest.approx(2 * figures[bench.FRESH_SPARE])
    tput = goals["fresh throughput, 2 workers"]
    assert tput["met"] == (figures[bench.TPUT_FRESH] >= 2000)
    monty = goals["fresh p50 back to back vs monty's pooled fresh session"]
    if figures[bench.MONTY] is None:
        assert monty["ratio"] is None and "not installed" in monty["why"]
    else:
        assert monty["target"] == pytest.approx(figures[bench.MONTY])
        assert monty["ratio"] == pytest.approx(figures[bench.FRESH_B2B] / figures[bench.MONTY])


def test_text_output_names_every_figure_and_the_goals(require_nsjail):
    proc = run_bench("-n", "5")
    assert proc.returncode == 0, proc.stderr
    for name in GOAL_FIGURES:
        assert name in proc.stdout, name
    assert "goals, ratio = measured / goal" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_missing_anchor_says_not_installed(monkeypatch):
    monkeypatch.setattr(anchors, "_version", lambda dist: None)
    monty, lackpy = anchors.monty_figures(n=1), anchors.lackpy_figures(n=1)
    assert monty[bench.MONTY] is None and monty.unavailable[bench.MONTY] == "not installed"
    assert monty.unavailable[bench.MONTY_CALL] == "not installed"
    assert lackpy[bench.LACKPY] is None and lackpy.unavailable[bench.LACKPY] == "not installed"
    figures = bench.Figures()
    figures.update({bench.FRESH_B2B: 900.0, **monty, **lackpy})
    figures.unavailable.update({**monty.unavailable, **lackpy.unavailable})
    judged = {g.figure: g for g in goals(figures)}
    goal = judged["fresh p50 back to back vs lackpy in-process"]
    assert goal.ratio is None and goal.met is None and "not installed" in goal.why


def test_goal_ratio_is_measured_over_goal_both_ways():
    ceiling = Goal("latency", 300.0, "us", "<= 250 us", 250.0)
    assert ceiling.ratio == pytest.approx(1.2) and ceiling.met is False
    floor = Goal("throughput", 2500.0, "runs/s", ">= 2,000", 2000.0, at_least=True)
    assert floor.ratio == pytest.approx(1.25) and floor.met is True


def test_markdown_table_has_a_row_per_goal_and_figure():
    from lackjail.cli.bench import _markdown

    figures = bench.Figures()
    figures.update({bench.FRESH_SPARE: 500.0, bench.FRESH_SPARE_P99: 900.0, bench.REUSE: 80.0})
    figures.missing(bench.MONTY, "not installed")
    table = _markdown(figures, goals(figures)).splitlines()
    assert table[0] == "| figure | measured | goal | ratio |"
    assert "| fresh p50, spares ready | 500.0 us | <= 250 us (250.0) | 2.00 (not met) |" in table
    assert "| reuse p50 | 80.0 us | <= 100 us (100.0) | 0.80 (met) |" in table
    assert f"| {bench.MONTY} | not installed | - | - |" in table
    assert len(table) == 2 + len(goals(figures)) + len(figures)  # no floor: no ratio table
    figures.update({bench.LEAN_REUSE_US: 40.0})
    table = _markdown(figures, goals(figures)).splitlines()
    assert "| reuse p50 vs lean persistent worker | 80.0 | 40.0 | 2.00x | <= 2x |" in table


def test_help_has_examples():
    from click.testing import CliRunner

    from lackjail.cli.bench import bench as command

    result = CliRunner().invoke(command, ["--help"])
    assert result.exit_code == 0 and "Examples:" in result.output
    assert "lackjail bench --only fresh" in result.output


def test_every_measured_run_gets_a_program_text_never_run_before():
    """The controller keeps verdicts on programs it has seen: the figures must not lean on it."""
    programs = [fresh_program() for _ in range(1000)]
    assert len(set(programs)) == 1000
    for program in programs[:3]:
        namespace: dict = {}
        exec(compile(program, "<bench>", "exec"), namespace)
        assert namespace["x"] == 3  # the same trivial work, whatever its text


def test_nothing_but_the_bench_command_imports_the_benchmarks_and_the_jail_never_mounts_them():
    """The benchmarks sit above everything: no product module leans on them."""
    package = ROOT / "lackjail"
    for path in package.rglob("*.py"):
        where = path.relative_to(package).as_posix()
        if where.startswith("bench/") or where == "cli/bench.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            assert not [n for n in names if n.split(".")[:2] == ["lackjail", "bench"]], where
    image = (package / "images" / "python312.toml").read_text()
    assert "bench" not in image


def test_bench_measures_the_floor_in_the_same_run_and_reports_each_ratio(bench_json):
    """The lean floor runs here (nsjail is there: require_nsjail), and each of lackjail's
    figures is reported over its floor from the same run."""
    figures = bench_json["figures"]
    for name in (bench.LEAN_FORK_RPS, bench.LEAN_WARM_CHILD, bench.LEAN_REUSE_RPS):
        assert figures[name] > 0, name
    assert figures[bench.CLI_RUN] > 0 and figures[bench.BARE_START] > 0
    assert figures[bench.CLI_RUN_ALONE] > 0  # the command in its own process, beside
    rows = {row["figure"]: row for row in bench_json["floor_ratios"]}
    from lackjail.bench.goals import FLOORS

    assert set(rows) == {label for label, *_ in FLOORS}
    for label, mine, floor, _, _ in FLOORS:
        row = rows[label]
        if figures[mine] is None or figures[floor] is None:
            assert row["ratio"] is None, label
        else:
            assert row["ratio"] == pytest.approx(figures[mine] / figures[floor]), label
    goals_by_name = {g["figure"]: g for g in bench_json["goals"]}
    cli = goals_by_name["lackjail run end to end vs a bare interpreter start"]
    assert cli["target"] == pytest.approx(5 * figures[bench.BARE_START])


def test_floor_ratios_say_none_where_a_figure_is_missing():
    from lackjail.bench.goals import floor_ratios

    figures = bench.Figures()
    figures.update({bench.REUSE: 90.0, bench.LEAN_REUSE_US: 30.0, bench.TPUT_REUSE: 3000.0})
    figures.missing(bench.LEAN_REUSE_RPS, "the lean worker did not run: no nsjail")
    rows = {row["figure"]: row for row in floor_ratios(figures)}
    assert rows["reuse p50 vs lean persistent worker"]["ratio"] == pytest.approx(3.0)
    assert rows["reuse throughput vs lean persistent worker"]["ratio"] is None
    judged = {g.figure: g for g in goals(figures)}
    goal = judged["reuse throughput vs lean persistent worker"]
    assert goal.met is None and "no nsjail" in goal.why


def test_the_workers_sweep_measures_throughput_at_each_count(require_nsjail):
    proc = run_bench("--only", "floor", "--workers", "1,3", "-n", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)["figures"]
    for count in (1, 3):
        assert figures[bench.SWEEP_FRESH.format(count)] > 0
        assert figures[bench.SWEEP_REUSE.format(count)] > 0
    assert bench.SWEEP_FRESH.format(2) not in figures
    # a sweep's figure never takes the name of a section's (2 workers is both)
    names = {v for k, v in vars(bench).items() if k.isupper() and isinstance(v, str)}
    assert not {bench.SWEEP_FRESH.format(2), bench.SWEEP_REUSE.format(2)} & names


@pytest.mark.parametrize("value", ["0", "two", "1,,2", "100000"])
def test_a_bad_workers_list_names_the_option(value):
    from click.testing import CliRunner

    from lackjail.cli.bench import bench as command

    result = CliRunner().invoke(command, ["--workers", value])
    assert result.exit_code == 2 and "--workers" in result.output
    assert "comma-separated list of worker counts" in result.output


def test_bench_sets_a_fresh_run_at_the_python_level_beside_extended(require_nsjail):
    """Both levels measured in the same run, each figure as python's over extended's."""
    proc = run_bench("--only", "levels", "-n", "6", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    figures, unavailable = out["figures"], out["unavailable"]
    templates = [
        bench.LEVEL_FRESH,
        bench.LEVEL_SPARE,
        bench.LEVEL_CPU.replace("{part}", "children"),
        bench.LEVEL_CPU.replace("{part}", "all processes"),
        bench.LEVEL_RSS,
        bench.LEVEL_FAULTS_READY,
        bench.LEVEL_FAULTS,
    ]
    for template in templates:
        mine, base = (figures[template.format(level=lvl)] for lvl in ("python", "extended"))
        what = template.format(level="").removeprefix(" level: ").rpartition(" (")[0]
        ratio = bench.LEVEL_RATIO.format(what)
        if mine is None or not base:  # CPU counted in clock ticks may be 0 over a few runs
            assert unavailable[ratio], ratio
        else:
            assert mine >= 0, template
            assert figures[ratio] == pytest.approx(mine / base), ratio
    for template in (bench.LEVEL_FRESH, bench.LEVEL_SPARE, bench.LEVEL_FAULTS_READY):
        assert figures[template.format(level="python")] > 0, template
    # the python level's zygote loads a module when a program first imports it: a program
    # importing json is measured once its zygotes have, and their heap is the bigger for it
    importing = {
        what: figures[bench.LEVEL_IMPORT.format(what)]
        for what in (
            "fresh p50, back to back (us)",
            "zygote RSS (MB)",
            "fresh p50, back to back over extended's (x)",
            "zygote RSS over extended's (x)",
        )
    }
    assert importing["fresh p50, back to back (us)"] > 0
    assert importing["zygote RSS (MB)"] > figures[bench.LEVEL_RSS.format(level="python")]
    assert importing["zygote RSS over extended's (x)"] == pytest.approx(
        importing["zygote RSS (MB)"] / figures[bench.LEVEL_RSS.format(level="extended")]
    )


def test_the_python_levels_fresh_run_is_judged_against_extendeds():
    figures = bench.Figures()
    cpu = bench.LEVEL_CPU.replace("{part}", "all processes")
    figures.update(
        {
            bench.LEVEL_FRESH.format(level="python"): 1200.0,
            bench.LEVEL_FRESH.format(level="extended"): 1000.0,
            cpu.format(level="python"): 2000.0,
            cpu.format(level="extended"): 2500.0,
        }
    )
    judged = {g.figure: g for g in goals(figures)}
    fresh = judged["fresh p50 back to back at the python level vs extended"]
    assert fresh.ratio == pytest.approx(1.2) and fresh.met is False
    spent = judged["CPU per fresh run at the python level vs extended"]
    assert spent.ratio == pytest.approx(0.8) and spent.met is True


def test_scaling_goals_judge_16_workers_against_2_on_a_host_with_16_cores(monkeypatch):
    from lackjail.bench.figures import SWEEP_FRESH, SWEEP_REUSE

    figures = bench.Figures()
    figures[SWEEP_FRESH.format(2)], figures[SWEEP_FRESH.format(16)] = 1000.0, 3000.0
    figures[SWEEP_REUSE.format(2)], figures[SWEEP_REUSE.format(16)] = 6000.0, 30000.0
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    judged = {g.figure: g for g in goals(figures)}
    fresh, reuse = (
        judged["fresh throughput, 16 workers vs 2"],
        judged["reuse throughput, 16 workers vs 2"],
    )
    assert (fresh.target, fresh.met) == (3500.0, False)
    assert (reuse.target, reuse.met) == (24000.0, True)
    monkeypatch.setattr("os.cpu_count", lambda: 2)  # a small host measures itself, not the pool
    judged = {g.figure: g for g in goals(figures)}
    assert judged["fresh throughput, 16 workers vs 2"].met is None
    assert "16 cores" in judged["fresh throughput, 16 workers vs 2"].why
