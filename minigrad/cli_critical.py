"""``python -m minigrad critical-batch``: how many steps does a larger batch save?

Trains the digits MLP to a target training loss at batch sizes 1, 2, 4, ...,
128 made by accumulation, each at its own best learning rate, fits the
steps-examples trade-off (S/S_min − 1)(E/E_min − 1) = 1 and prints
B_crit = E_min/S_min beside the gradient noise scale measured while training
(:mod:`minigrad.experiments.critical_batch`).  Writes results.json, table.md,
tradeoff.png and noise_scale.png into ``--out`` (default runs/critical-batch).
"""
from __future__ import annotations

import sys


def add_critical_batch_parser(commands, positive_float) -> None:
    """Add the ``critical-batch`` command to ``commands`` (the subparsers of ``minigrad``)."""
    p = commands.add_parser(
        "critical-batch", allow_abbrev=False,
        help="measure the critical batch size and the gradient noise scale (digits, SGD)",
        description="Train the digits MLP with SGD to a target training loss at batch sizes "
                    "1, 2, 4, ..., 128 (accumulated micro-batches of at most 8), each at its "
                    "best learning rate from a sweep over factors of 2; fit S = S_min + "
                    "E_min/B and report B_crit = E_min/S_min and the measured noise scale "
                    "B_simple = tr(Σ)/|G|². About 30 s on 2 cores; --quick a few seconds.")
    p.add_argument("--quick", action="store_true",
                   help="batch sizes 1, 4, 16, 64, one seed, learning rates a factor 2 apart "
                        "(a few seconds)")
    p.add_argument("--target", type=positive_float, default=None, metavar="LOSS",
                   help="the training loss to reach (default: 0.3; the start is 2.36)")
    p.add_argument("--out", metavar="DIR", default="runs/critical-batch",
                   help="folder for results.json, table.md and the two figures "
                        "(default: runs/critical-batch)")
    p.add_argument("--record", metavar="PATH", default=None,
                   help="also write the numbers (the fit, the noise scales, each batch "
                        "size's best lr, steps and examples, the sweep) and this command "
                        "line to the JSON file PATH; benchmarks/critical_batch.json is the "
                        "record chapter 14 quotes (tests/docs/test_prose_numbers.py)")
    p.set_defaults(command_parser=p, device="cpu")


def run_critical_batch(args) -> int:
    """Run the sweep, print the table and the fit, write the files."""
    from .experiments import critical_batch as cb  # noqa: PLC0415 (keep --help fast)
    target = cb.TARGET_LOSS if args.target is None else args.target
    print(f"minigrad critical-batch: digits MLP, SGD, to training loss {target}"
          f"{', quick' if args.quick else ''}", flush=True)
    result = cb.critical_batch(quick=args.quick, target=target,
                               on_progress=lambda line: print(line, flush=True))
    print(result.table())
    print(f"fit S = S_min + E_min/B: S_min = {result.s_min:.1f} steps, E_min = "
          f"{result.e_min:.0f} examples, B_crit = E_min/S_min = {result.b_crit:.1f}")
    scale = result.noise_scale_at_target
    fmt = lambda value: "not reached" if value is None else f"{value:.1f}"  # noqa: E731
    print("gradient noise scale B_simple = tr(Σ)/|G|² when batch 32 (4 x 8) first reaches the "
          f"target: {fmt(scale)} (smoothed over training), {fmt(result.noise_scale_frozen)} "
          "(those parameters held fixed, 300 windows at lr 0)")
    for path in cb.write_outputs(result, args.out):
        print(f"wrote {path}")
    if args.record:
        print(f"wrote {write_record(result, args.record, getattr(args, 'argv', None))}")
    print(f"done in {result.seconds:.1f} s", file=sys.stderr)
    return 0


def write_record(result, path, argv=None) -> str:
    """The numbers of ``result`` (a :class:`CriticalBatchResult`) without the
    update-by-update noise record, and the command line (``argv``: the command's
    arguments), as JSON in ``path``."""
    import json  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415
    from .cli_gpt import command_line  # noqa: PLC0415
    data = result.to_dict()
    data.pop("noise_record")
    data["seconds"] = round(data["seconds"], 1)
    record = {"command": command_line("critical-batch", argv), "results": data}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return str(out)
