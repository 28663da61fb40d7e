"""``python -m minigrad pretrain`` and ``python -m minigrad finetune``: the GPT on the command line.

``pretrain`` trains the character-level GPT on tinyshakespeare and writes its
checkpoint (the package ships the one its defaults produce); ``finetune``
fine-tunes that checkpoint on prompt/completion pairs with gradient
accumulation, fully or through LoRA adapters.
"""
from __future__ import annotations

import shlex
import sys

import numpy as np


def add_gpt_parsers(commands, number_types, add_device_and_dtype) -> None:
    """Add ``pretrain`` and ``finetune`` to ``commands`` (the subparsers of ``minigrad``)."""
    positive_int, non_negative_int, positive_float = number_types
    from .experiments.pretrain import DEFAULTS as D  # noqa: PLC0415

    p = commands.add_parser(
        "pretrain", allow_abbrev=False, help="pre-train the character-level GPT on tinyshakespeare",
        description="Train a GPT from scratch on the first 90%% of tinyshakespeare (one "
                    "character per token), report the loss on the last 10%% and a sample, "
                    "and write the checkpoint with minigrad.save.")
    for flag, kind, what in (("n-layer", positive_int, "transformer blocks"),
                             ("n-head", positive_int, "attention heads"),
                             ("n-embd", positive_int, "width (a multiple of --n-head)"),
                             ("block-size", positive_int, "context length in characters"),
                             ("batch-size", positive_int, "windows per step"),
                             ("steps", positive_int, "optimizer steps"),
                             ("warmup", non_negative_int, "linear warm-up steps"),
                             ("seed", non_negative_int, "seed of the weights and data order")):
        default = D[flag.replace("-", "_")]
        p.add_argument(f"--{flag}", type=kind, default=default,
                       help=f"{what} (default: {default})")
    p.add_argument("--lr", type=positive_float, default=D["lr"],
                   help=f"peak learning rate of AdamW (default: {D['lr']})")
    p.add_argument("--stop-after", type=positive_int, default=None, metavar="N",
                   help="stop after N steps of the planned schedule (a shortened run)")
    p.add_argument("--out", metavar="PATH", default=None,
                   help="write the checkpoint there (.npz) and its record (.json) beside it")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_device_and_dtype(p, "float32")
    p.set_defaults(command_parser=p)

    f = commands.add_parser(
        "finetune", allow_abbrev=False,
        help="fine-tune the pre-trained GPT on prompt/completion pairs with accumulation",
        description="Supervised fine-tuning of the shipped GPT checkpoint on prompt/"
                    "completion pairs from tinyshakespeare (prompt: the end of the previous "
                    "speech and the next speaker's name; completion: the first line of the "
                    "speech). The loss counts completion tokens only; each micro-batch "
                    "passes its completion-token count as num_items, so B x K accumulated "
                    "equals one batch of B*K.")
    f.add_argument("--micro-batch", type=positive_int, default=1, metavar="B",
                   help="pairs per micro-batch (default: 1)")
    f.add_argument("--accumulation-steps", type=positive_int, default=16, metavar="K",
                   help="micro-batches per update (default: 16)")
    f.add_argument("--updates", type=positive_int, default=30, metavar="U",
                   help="optimizer updates (default: 30)")
    f.add_argument("--lr", type=positive_float, default=None,
                   help="AdamW learning rate (default: 3e-4, or 3e-3 with --lora-rank)")
    f.add_argument("--lora-rank", type=non_negative_int, default=0, metavar="R",
                   help="train LoRA adapters of rank R on c_attn and c_proj, base frozen "
                        "(default: 0, full fine-tuning)")
    f.add_argument("--lora-alpha", type=positive_float, default=None,
                   help="LoRA's alpha (default: 2 * rank)")
    f.add_argument("--quantize", choices=("int8", "nf4", "nf4-dq"), default=None,
                   help="store the base's Linear weights frozen in 8 bits (row-wise absmax, "
                        "LLM.int8()) or 4 bits (NF4, block-wise absmax; nf4-dq: with double "
                        "quantization, QLoRA) and print their measured bytes beside the "
                        "planner's; with --lora-rank this is QLoRA")
    f.add_argument("--checkpointing", action="store_true",
                   help="recompute each block's activations in backward (less memory)")
    f.add_argument("--normalization", choices=("tokens", "micro-batch-mean"), default="tokens",
                   help="tokens: num_items = completion tokens (exact); micro-batch-mean: "
                        "the 2024 bug, each micro-batch's mean weighted 1/K")
    f.add_argument("--compare-micro-batch", action="store_true",
                   help="also fine-tune copies with plain batches of B (no accumulation, K "
                        "times the updates), at the same lr and at lr/sqrt(K), and report "
                        "their loss per window and final validation loss, e.g. "
                        "--micro-batch 1 --accumulation-steps 16; at the same lr the K "
                        "times as many steps make it a learning-rate comparison")
    f.add_argument("--plot", metavar="PATH",
                   help="save the loss curve(s) to PATH (.png, .svg, .pdf; needs matplotlib)")
    f.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of the data order and the adapters (default: 0)")
    f.add_argument("--checkpoint", metavar="PATH", default=None,
                   help="the pre-trained GPT to fine-tune, as written by pretrain --out "
                        "(default: the checkpoint shipped in the package)")
    f.add_argument("--out", metavar="PATH", default=None,
                   help="save the result: the adapters alone with --lora-rank, else the model")
    f.add_argument("--record", metavar="PATH", default=None,
                   help="write the run's numbers (validation losses, last window losses, "
                        "the base's bytes) and this command line to the JSON file PATH; "
                        "the records under benchmarks/finetune/ are the ones the chapters "
                        "quote (tests/docs/test_prose_numbers.py)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_device_and_dtype(f, "float32")
    f.set_defaults(command_parser=f)


def run_pretrain(args, progress) -> int:
    """Train, print the validation loss and a sample, write the checkpoint."""
    from .experiments.pretrain import pretrain, sample  # noqa: PLC0415
    from .data import CharTokenizer, load_tinyshakespeare  # noqa: PLC0415
    if args.n_embd % args.n_head:
        args.command_parser.error(f"--n-embd {args.n_embd} must be a multiple of --n-head "
                                  f"{args.n_head}")
    steps = args.steps if args.stop_after is None else min(args.steps, args.stop_after)
    print(f"minigrad pretrain: GPT {args.n_layer} layers x {args.n_head} heads, width "
          f"{args.n_embd}, context {args.block_size}, batch {args.batch_size}, {steps} of "
          f"{args.steps} steps, {args.device}, {args.dtype}", flush=True)
    bar = progress(steps, not args.no_progress, "pretrain")

    def on_step(step, loss):
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}")
        elif step % 50 == 0 or step == steps - 1:
            print(f"step {step + 1:5d}  loss {loss:.4f}", flush=True)

    command = "python -m minigrad pretrain " + shlex.join(sys.argv[2:] if sys.argv[1:2] ==
                                                          ["pretrain"] else [])
    model, record = pretrain(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                             block_size=args.block_size, batch_size=args.batch_size,
                             steps=args.steps, lr=args.lr, warmup=args.warmup, seed=args.seed,
                             stop_after=args.stop_after, device=args.device,
                             dtype=np.dtype(args.dtype), on_step=on_step,
                             command=command.strip())
    if bar is not None:
        bar.close()
    text = sample(model, CharTokenizer(load_tinyshakespeare()), "ROMEO:\n", 200, seed=0)
    record["sample"] = text
    print(f"train loss (last step) {record['train_losses'][-1]:.4f}, validation loss "
          f"{record['val_loss']:.4f} after {len(record['train_losses'])} steps in "
          f"{record['seconds']:.0f} s")
    print("sample (temperature 0.8):\n" + text)
    if args.out:
        from .experiments.pretrain import save_gpt  # noqa: PLC0415
        print(f"wrote {save_gpt(model, CharTokenizer(load_tinyshakespeare()), record, args.out)}")
    return 0


def run_finetune(args, progress) -> int:
    """Fine-tune, log each window's loss, report validation losses and samples."""
    from .experiments.finetune import finetune  # noqa: PLC0415
    batch = args.micro_batch * args.accumulation_steps
    mode = f"LoRA rank {args.lora_rank}" if args.lora_rank else "full fine-tuning"
    if args.quantize:
        mode += f" on a frozen {args.quantize} base"
    print(f"minigrad finetune: {mode}, {args.accumulation_steps} accumulation steps x "
          f"micro-batch {args.micro_batch} = batch {batch} pairs, {args.updates} updates, "
          f"num_items={'completion tokens' if args.normalization == 'tokens' else 'None'}"
          f"{', checkpointing' if args.checkpointing else ''}, {args.device}, {args.dtype}",
          flush=True)
    bar = progress(args.updates, not args.no_progress, "finetune")

    def on_update(update, loss):
        line = f"update {update + 1:4d}  window loss {loss:.4f}"
        if bar is None:
            print(line, flush=True)
        else:
            bar.write(line)
            bar.update(1)

    result = finetune(micro_batch=args.micro_batch, accumulation_steps=args.accumulation_steps,
                      updates=args.updates, lr=args.lr, lora_rank=args.lora_rank,
                      lora_alpha=args.lora_alpha, checkpointing=args.checkpointing,
                      normalization=args.normalization, seed=args.seed, device=args.device,
                      dtype=np.dtype(args.dtype), compare_micro_batch=args.compare_micro_batch,
                      checkpoint=args.checkpoint, on_update=on_update, quantize=args.quantize)
    if bar is not None:
        bar.close()
    if args.quantize:
        b = result["base_bytes"]
        print(f"base in {args.quantize}: {b['measured']:,} bytes measured, {b['planned']:,.0f} "
              f"planned; {b['measured_per_weight']:.4f} bytes per quantized weight measured, "
              f"{b['planned_per_weight']:.4f} planned")
        print(f"validation loss per completion token of the float base: "
              f"{result['val_loss_float']:.4f}")
    print(f"trainable parameters: {result['trainable_parameters']:,} of "
          f"{result['parameters']:,}")
    print(f"validation loss per completion token: {result['val_loss_before']:.4f} before, "
          f"{result['val_loss_after']:.4f} after")
    if "micro_batch_losses" in result:
        print(f"plain batch {args.micro_batch} ({args.updates * args.accumulation_steps} "
              f"updates): last window's loss {result['micro_batch_losses'][-1]:.4f} "
              f"(accumulated: {result['window_losses'][-1]:.4f}), validation loss "
              f"{result['micro_batch_val_loss']:.4f} at the same lr "
              f"{result['micro_batch_lr']:.3g}, {result['micro_batch_scaled_val_loss']:.4f} "
              f"at lr/sqrt({args.accumulation_steps}) = {result['micro_batch_scaled_lr']:.3g}")
        print(f"  (at the same lr, batch {args.micro_batch} takes {args.accumulation_steps} "
              "times as many steps of the same size: the gap there is the learning rate's, "
              "not gradient noise's; chapter 14 compares batch sizes at tuned rates)")
    print(f"prompt: {result['prompt']!r}\n  before: {result['sample_before']!r}\n"
          f"  after:  {result['sample_after']!r}")
    if args.plot:
        _plot_finetune(result, args)
        print(f"wrote {args.plot}")
    if args.out:
        import minigrad  # noqa: PLC0415
        from .nn import lora_state_dict  # noqa: PLC0415
        model = result["model"]
        state = lora_state_dict(model) if args.lora_rank else model.state_dict()
        print(f"wrote {minigrad.save(state, args.out)}"
              + (" (the adapters alone)" if args.lora_rank else ""))
    if args.record:
        print(f"wrote {write_finetune_record(result, args.record, getattr(args, 'argv', None))}")
    print(f"done in {result['seconds']:.1f} s")
    return 0


#: The numbers of a finetune result that ``--record`` keeps (those present).
RECORD_KEYS = ("val_loss_float", "val_loss_before", "val_loss_after", "micro_batch_val_loss",
               "micro_batch_lr", "micro_batch_scaled_val_loss", "micro_batch_scaled_lr",
               "trainable_parameters", "parameters")


def finetune_record(result) -> dict:
    """The numbers of a ``finetune`` result, rounded to 6 significant digits:
    the keys of :data:`RECORD_KEYS` it has, the last window's loss of each run
    (``last_window_loss``, ``micro_batch_last_window_loss``, ...) and the base's
    bytes with ``--quantize``."""
    values = {key: result[key] for key in RECORD_KEYS if key in result}
    for run in ("window", "micro_batch", "micro_batch_scaled"):
        if f"{run}_losses" in result:
            name = "last_window_loss" if run == "window" else f"{run}_last_window_loss"
            values[name] = result[f"{run}_losses"][-1]
    for key, value in result.get("base_bytes", {}).items():
        if isinstance(value, (int, float)):
            values[f"base_{key}"] = value
    return {key: float(f"{float(value):.6g}") for key, value in sorted(values.items())}


def command_line(command: str, argv, drop=("--no-progress",)) -> str:
    """``python -m minigrad COMMAND ARGS`` from the arguments ``argv`` the command was
    given (``sys.argv[1:]`` when None), without ``--record PATH`` and ``drop``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = argv[1:] if argv[:1] == [command] else argv
    args = [a for i, a in enumerate(args)
            if a != "--record" and (i == 0 or args[i - 1] != "--record")
            and not a.startswith("--record=") and a not in drop]
    return ("python -m minigrad " + shlex.join([command] + args)).strip()


def write_finetune_record(result, path, argv=None) -> str:
    """``{"command": ..., "results": finetune_record(result)}`` as JSON in ``path``
    (``argv``: the command's arguments, for the command line)."""
    import json  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415
    record = {"command": command_line("finetune", argv), "results": finetune_record(result)}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return str(out)


def _plot_finetune(result, args) -> None:
    """The window losses (and the plain micro-batch run's per-window means)."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, ax = plt.subplots(figsize=(6, 3.5))
    updates = range(1, len(result["window_losses"]) + 1)
    ax.plot(updates, result["window_losses"],
            label=f"{args.accumulation_steps} x {args.micro_batch} accumulated")
    if "micro_batch_losses" in result:
        ax.plot(updates, result["micro_batch_losses"], "--",
                label=f"batch {args.micro_batch}, same lr, over the same "
                      f"{args.accumulation_steps} x {args.micro_batch} pairs")
        ax.plot(updates, result["micro_batch_scaled_losses"], ":",
                label=f"batch {args.micro_batch}, lr/√{args.accumulation_steps}")
    ax.set_xlabel("window")
    ax.set_ylabel("loss per completion token")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot)
    plt.close(fig)
