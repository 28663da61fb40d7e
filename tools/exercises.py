"""The graded exercises of the course: id, title and the chapter text that poses them.

Each exercise ``N.M`` (chapter N, exercise M) is one or more solution regions in
the library source::

    # BEGIN SOLUTION ch03.2
    ...the reference lines...
    # END SOLUTION

and, in ``chapters/NN_*.md``, a heading preceded by the anchor line
``<a id="exercise-N.M"></a>``.  Adding an exercise takes a row here, the two
marker lines around a function body (or part of one), and a test marked
``@pytest.mark.exercise("N.M")``.
"""
from __future__ import annotations

import re
from pathlib import Path

EXERCISES = {
    "1.1": "Add.backward: gradients through a sum, unbroadcast",
    "1.2": "Mul.backward: the product rule",
    "1.3": "Div.backward: the quotient rule",
    "1.4": "Exp.backward",
    "1.5": "Log.backward",
    "1.6": "Tanh.backward",
    "1.7": "unbroadcast: sum over broadcast axes",
    "1.8": "the topological order, iteratively",
    "1.9": "Sum.backward with axis and keepdims",
    "1.10": "Mean.backward",
    "1.11": "Max.backward: ties share the gradient",
    "1.12": "MatMul.backward",
    "1.13": "Transpose.backward: the inverse permutation",
    "1.14": "GetItem.backward: repeated indices add up",
    "2.1": "ReLU.backward",
    "2.2": "a sigmoid that never overflows",
    "2.3": "a stable log_softmax",
    "2.4": "Softmax.backward",
    "2.5": "cross_entropy forward with ignore_index",
    "2.6": "cross_entropy backward: softmax minus one-hot",
    "2.7": "Linear backward: y = x Wᵀ + b",
    "2.8": "inverted dropout's mask",
    "2.9": "named_parameters: walking the module tree",
    "2.10": "the normalization backward",
    "2.11": "BatchNorm's running statistics",
    "2.12": "Embedding backward: scatter-add",
    "3.1": "SGD: the plain step and weight decay",
    "3.2": "SGD: momentum and Nesterov",
    "3.3": "Adam: moments and bias correction",
    "3.4": "AdamW: decoupled weight decay",
    "3.5": "the global gradient norm and clipping",
    "3.6": "StepLR",
    "3.7": "CosineAnnealingLR",
    "3.8": "LinearLR: warm-up",
    "3.9": "zero_grad",
    "4.1": "adding a finished gradient into .grad",
    "4.2": "splitting a batch into micro-batches",
    "4.3": "the accumulator's item-weighted backward",
    "4.4": "counting the window: step",
    "4.5": "one update per window: divide once, clip",
    "5.1": "the short last window: flush",
    "5.2": "the mean over kept positions (token counts)",
    "5.3": "a non-finite window is skipped whole",
    "5.4": "language-model batches: inputs, targets, padding",
    "6.1": "batch statistics: mean and biased variance",
    "6.2": "Chan's merge of two sets of moments",
    "6.3": "merging a micro-batch into the window's statistics",
    "6.4": "one running-statistics update per window",
    "7.1": "checkpoint forward: run without a graph",
    "7.2": "checkpoint backward: recompute, then backpropagate",
    "7.3": "checkpoint_sequential: segments",
    "8.1": "the character tokenizer",
    "8.2": "sampling text from the model",
    "9.1": "one door to the array module",
    "9.2": "moving a tensor between devices, and its gradient",
    "10.1": "one all-reduce per window",
    "10.2": "SyncBatchNorm's two sums",
    "10.3": "uneven shards without repeats",
    "11.1": "the GPipe schedule",
    "11.2": "the 1F1B schedule",
    "11.3": "the simulated clock",
    "12.1": "Kahan summation",
    "12.2": "unscale once per window",
    "12.3": "the planner's bytes per parameter",
    "12.4": "NF4 block quantize and dequantize",
    "13.1": "attention's forward in terms of existing Functions",
    "13.2": "the causal mask",
    "13.3": "LoRA's forward and merge",
    "13.4": "the completion tokens of a prompt/completion batch",
    "14.1": "the gradient noise scale from two batch sizes",
}

ID_RE = re.compile(r"^(\d{1,2})\.(\d{1,2})$")


def sort_key(exercise_id: str) -> tuple[int, int]:
    """(chapter, number): "1.10" sorts after "1.9"."""
    match = ID_RE.match(exercise_id)
    if not match:
        raise ValueError(f"exercise id {exercise_id!r} is not of the form N.M (e.g. 3.2)")
    return int(match.group(1)), int(match.group(2))


def chapter_of(exercise_id: str) -> int:
    return sort_key(exercise_id)[0]


def chapter_file(root: Path, chapter: int) -> Path | None:
    """``chapters/NN_*.md`` of the tree at ``root``, or None when not written yet."""
    found = sorted((Path(root) / "chapters").glob(f"{chapter:02d}_*.md"))
    return found[0] if found else None


def chapter_link(root: Path, exercise_id: str) -> str:
    """``chapters/03_optimizers.md#exercise-3.2`` (the file name guessed from the
    course's numbering when the chapter is not written yet)."""
    chapter = chapter_of(exercise_id)
    path = chapter_file(root, chapter)
    name = path.name if path else _PLANNED_CHAPTERS.get(chapter, f"{chapter:02d}.md")
    return f"chapters/{name}#exercise-{exercise_id}"


_PLANNED_CHAPTERS = {
    1: "01_autograd.md", 2: "02_layers_and_losses.md", 3: "03_optimizers.md",
    4: "04_gradient_accumulation.md", 5: "05_normalizing_the_loss.md",
    6: "06_batchnorm_exception.md", 7: "07_memory_and_time.md",
    8: "08_character_model.md", 9: "09_gpu.md", 10: "10_data_parallel.md",
    11: "11_pipeline.md", 12: "12_precision_and_memory.md",
    13: "13_finetuning_a_transformer.md", 14: "14_how_many_steps.md",
}


def stub_message(root: Path, exercise_id: str) -> str:
    """The text of the student's ``NotImplementedError``."""
    return (f"Exercise {exercise_id} — {EXERCISES[exercise_id]}: "
            f"see {chapter_link(root, exercise_id)}")


def parse_selection(text: str | None, known) -> list[str]:
    """Exercise ids selected by chapters: ``"3-5"``, ``"1,3"``, ``"4-"``, ``"all"``
    or None (all).  Raises ValueError for malformed text."""
    ids = sorted(known, key=sort_key)
    if text is None or text.strip() in ("", "all"):
        return ids
    chapters = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d*))?", part)
        if not match:
            raise ValueError(f"CHAPTERS={text!r}: expected chapter numbers such as 3, "
                             f"3-5, 1,3 or 4- (from 4 on), got {part!r}")
        low = int(match.group(1))
        if match.group(2) is None:
            high = low
        else:
            high = int(match.group(2)) if match.group(2) else 99
        if high < low:
            raise ValueError(f"CHAPTERS={text!r}: the range {part!r} is empty")
        chapters.update(range(low, high + 1))
    return [i for i in ids if chapter_of(i) in chapters]


def main(argv=None) -> int:
    """``python tools/exercises.py --check 3.2,3.3``: exit 2 at once, naming the
    known ids of that chapter, when an id is not an exercise (``make check``
    runs it before collecting thousands of tests)."""
    import sys
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 2 or args[0] != "--check":
        print("usage: python tools/exercises.py --check N.M[,N.M...]", file=sys.stderr)
        return 2
    wanted = [i.strip() for i in args[1].split(",") if i.strip()]
    unknown = [i for i in wanted if i not in EXERCISES]
    for ident in unknown:
        match = ID_RE.match(ident)
        same = sorted((i for i in EXERCISES if match and chapter_of(i) == int(match.group(1))),
                      key=sort_key)
        print(f"make check: EX={ident} is not an exercise; "
              + (f"chapter {match.group(1)} has {', '.join(same)}" if same else
                 "ids look like 3.2 (the chapters' exercises: tools/exercises.py)"),
              file=sys.stderr)
    return 2 if unknown or not wanted else 0


if __name__ == "__main__":
    raise SystemExit(main())
