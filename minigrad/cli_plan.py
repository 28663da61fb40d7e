"""``python -m minigrad plan``: will this training fit?  The memory planner on the command line.

Example (the course's 13B model, full fine-tuning in mixed precision)::

    python -m minigrad plan --params 13e9 --param-dtype float16 --master-weights \\
        --optimizer adam --micro-batch 1 --seq-len 2048 --width 5120 --depth 40 \\
        --heads 40 --checkpointing --accumulation-steps 16 --memory 24GB

prints the breakdown (parameters, gradients, optimizer state, activations,
total) and the verdict; the exit status is 0 when it fits (or no --memory was
given) and 1 when it does not.
"""
from __future__ import annotations

import argparse
import math

DTYPES = ("float64", "float32", "float16", "bfloat16")


def _count(text: str) -> int:
    """'13e9' or '13000000000' -> 13000000000 (an integer >= 0)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count such as 13e9, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0 and value == int(value)):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(value)


def _size(text: str) -> float:
    from .memory_planner import parse_bytes  # noqa: PLC0415
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_plan_parser(commands) -> None:
    """Add the ``plan`` command to ``commands`` (the subparsers of ``minigrad``)."""
    p = commands.add_parser(
        "plan", allow_abbrev=False, help="estimate the peak memory of training, and whether it fits",
        description="Estimate the peak memory of training from the parameter count, the "
                    "dtypes, the optimizer, the micro-batch and the activations (a "
                    "transformer's shape, or measured bytes per item). Exit status 1 when "
                    "it does not fit --memory.")
    p.add_argument("--params", type=_count, required=True, metavar="N",
                   help="parameter count, e.g. 13e9")
    p.add_argument("--trainable", type=_count, default=None, metavar="N",
                   help="parameters that train (adapters); the rest is a frozen base "
                        "(default: all)")
    p.add_argument("--param-dtype", choices=DTYPES, default="float32",
                   help="dtype of the trainable values (default: float32)")
    p.add_argument("--grad-dtype", choices=DTYPES, default=None,
                   help="dtype of the gradients (default: --param-dtype)")
    p.add_argument("--master-weights", action="store_true",
                   help="keep a float32 master copy of the trainable values (mixed precision)")
    p.add_argument("--optimizer", choices=("sgd", "sgd-momentum", "adam"), default="adam",
                   help="optimizer whose state is counted (default: adam)")
    p.add_argument("--state-dtype", choices=DTYPES, default="float32",
                   help="dtype of the optimizer state (default: float32)")
    p.add_argument("--frozen-dtype", choices=DTYPES + ("8bit", "4bit", "int8-rowwise", "nf4",
                                                      "fp4", "nf4-dq", "fp4-dq"),
                   default=None,
                   help="storage of the frozen base (default: --param-dtype); 8bit and 4bit "
                        "count the codes alone, int8-rowwise, nf4 and nf4-dq also their "
                        "scales (int8-rowwise: one per row of --width numbers)")
    p.add_argument("--micro-batch", type=_count, default=1, metavar="B",
                   help="items (sequences) per forward/backward (default: 1)")
    p.add_argument("--accumulation-steps", type=_count, default=1, metavar="K",
                   help="micro-batches per update; changes the batch, not the memory")
    p.add_argument("--activation-bytes-per-item", type=float, default=None, metavar="BYTES",
                   help="measured activation bytes per item (instead of a transformer's shape)")
    for flag in ("seq-len", "width", "depth", "heads"):
        p.add_argument(f"--{flag}", type=_count, default=None,
                       help=f"transformer {flag.replace('-', ' ')}")
    p.add_argument("--activation-dtype", choices=DTYPES, default=None,
                   help="dtype of the activations (default: --param-dtype)")
    p.add_argument("--checkpointing", action="store_true",
                   help="checkpoint every transformer layer")
    p.add_argument("--memory", type=_size, default=None, metavar="SIZE",
                   help="memory to fit in: 24GB, 80GiB, 1e9 ...")
    p.set_defaults(command_parser=p, device="cpu")


def run_plan(args) -> int:
    """Print the plan; 0 when it fits (or no --memory), 1 when it does not."""
    from .memory_planner import plan  # noqa: PLC0415
    try:
        result = plan(args.params, trainable=args.trainable, param_dtype=args.param_dtype,
                      grad_dtype=args.grad_dtype, master_weights=args.master_weights,
                      optimizer=args.optimizer, state_dtype=args.state_dtype,
                      frozen_dtype=args.frozen_dtype, micro_batch=args.micro_batch,
                      activation_bytes_per_item=args.activation_bytes_per_item,
                      seq_len=args.seq_len, width=args.width, depth=args.depth,
                      heads=args.heads, activation_dtype=args.activation_dtype,
                      checkpointing=args.checkpointing,
                      accumulation_steps=args.accumulation_steps, memory=args.memory)
    except ValueError as error:
        args.command_parser.error(str(error).removeprefix("plan: "))
    s = result.settings
    print(f"{s['params']:,} parameters ({s['trainable']:,} trainable), {s['optimizer']}, "
          f"micro-batch {s['micro_batch']} x {s['accumulation_steps']} steps = batch "
          f"{s['batch']}")
    print(f"resident: {result.resident / s['params']:.2f} bytes per parameter")
    print(result)
    return 1 if result.fits is False else 0
