"""Which chapter of the course each test belongs to.

A test belongs to the chapter of the latest material it uses: a chapter-1
test uses only autograd and the chapter-1 functions, never ``nn.Linear``
(chapter 2) or an optimizer (chapter 3).  The material a test uses is
measured, not declared: tools/dependencies.json lists the exercises whose
regions it runs, and a test's chapter is the latest of those and of its
place below.  So blanking the exercises of
chapter N (``make student CHAPTERS=N-``) leaves every test of the chapters
before N passing, and ``make selftest`` checks exactly that.

Chapter 0 holds what needs no exercise at all: the data sets, the command
line's argument checks, the tooling.  The plugin (tools/course_plugin.py) adds
the marker ``chapterNN`` to every test from the longest matching entry of
``PATHS`` (a file or folder) and ``TESTS`` (one test, overriding its file),
raised to the latest chapter whose exercises the test runs.
A test file missing here gets no chapter and is named in the summary.
"""

PATHS = {
    "tools/tests/": 0,
    "tests/data/": 0,                  # the data sets and the loader need no exercise
    "tests/test_backend.py": 0,
    "tests/test_cli.py": 0,            # the command line's argument checks
    "tests/test_benchmarks.py": 0,
    "tests/test_autograd.py": 1,
    "tests/test_tensor.py": 1,
    "tests/test_gradcheck.py": 1,
    "tests/functions/": 1,
    "tests/functions/test_softmax.py": 2,
    "tests/nn/": 2,
    "tests/optim/": 3,
    "tests/optim/test_accumulation.py": 4,
    "tests/optim/test_accumulation_equivalence.py": 4,
    "tests/optim/test_accumulation_device.py": 4,
    "tests/experiments/": 4,
    "tests/experiments/test_sampling.py": 8,
    "tests/experiments/test_results.py": 0,   # the results files of the notebooks
    "tests/test_checkpoint.py": 7,
    "tests/test_memory.py": 7,
    "tests/exercises/test_ch01.py": 1,
    "tests/exercises/test_ch02.py": 2,
    "tests/exercises/test_ch03.py": 3,
    "tests/exercises/test_ch04.py": 4,
    "tests/exercises/test_ch05.py": 5,
    "tests/exercises/test_ch06.py": 6,
    "tests/exercises/test_ch07.py": 7,
    "tests/exercises/test_ch08.py": 8,
    "tests/exercises/test_ch09.py": 9,
    "tests/exercises/test_ch10.py": 10,
    "tests/exercises/test_ch11.py": 11,
    "tests/docs/": 0,                  # per chapter file: TESTS below
    "tests/site/": 0,
    "tests/test_setup.py": 0,
    "tests/test_chapter_figures.py": 0,
    "tests/test_chapter_figures_04_06.py": 6,   # chapters 04-06's figures: accumulator, BatchNorm
    "tests/test_testing.py": 1,
    "tests/test_backward_driver.py": 1,
    "tests/test_grad_mode_threads.py": 1,
    "tests/test_inplace.py": 1,
    "tests/test_inplace_aliasing.py": 1,
    "tests/test_dtypes.py": 1,
    "tests/test_empty_tensors.py": 1,
    "tests/test_numpy_interop.py": 1,
    "tests/test_pytorch_names.py": 2,   # nll_loss and cross_entropy too
    "tests/test_opinfo_sweep.py": 13,   # every shared operator, attention included
    "tests/test_pytorch_edges.py": 13,  # edge values and refusals, attention included
    "tests/test_tinygrad_parity.py": 13,  # tinygrad's operator suite, its fixes
    "tests/test_signatures.py": 2,      # the layers' and functional's signatures too
    "tests/test_serialization.py": 3,
    "tests/test_checkpoint_context.py": 7,
    "tests/test_gpu_kernels.py": 9,
    "tests/test_distributed.py": 10,
    "tests/pipeline/": 11,
    "tests/functions/test_blocked_gradients.py": 2,   # ReLU, dropout, embedding, cross-entropy
    "tests/nn/test_exact_batchnorm.py": 6,            # the window's statistics (6.3, 6.4)
    "tests/optim/test_precision.py": 12,
    "tests/experiments/test_precision.py": 12,
    "tests/test_memory_plan.py": 12,
    "tests/nn/test_quantized.py": 12,
    "tests/exercises/test_ch12.py": 12,
    "tests/exercises/test_ch13.py": 13,
    "tests/exercises/test_ch14.py": 14,
    "tests/optim/test_noise_scale.py": 14,     # the gradient noise scale
    "tests/experiments/test_critical_batch.py": 14,
    "tests/functions/test_attention.py": 13,   # attention: chapter 13's material
    "tests/models/": 13,
}

# Tests parametrized by a chapter's file (the docs run each chapter's code
# blocks and find its quotes in the library): the chapter is the number in
# the parameter, chapters/NN_*.md or chapters/answers/NN.md.
BY_PARAMETER = {"tests/docs/": r"^\[chapters/(?:answers/)?(\d{2})"}

# The chapter of a test is the latest of its place above and the chapters of
# the exercises whose regions it runs (tools/dependencies.json, derived from
# a coverage run that follows the Python processes a test starts), so a test
# that uses later material than the rest of its file moves to that chapter by
# itself.  TESTS would name a test that coverage cannot see (a child process
# with a fresh environment): none at present.
TESTS: dict[str, int] = {}
