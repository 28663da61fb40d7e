"""Gradient accumulation equals the full-batch update: the claims, proved in float64.

Each test trains the same model twice, on full batches and on micro-batches
through GradientAccumulator, and compares gradients or parameters with the
relative error max |a - b| / max |b|.
"""
import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.data import CharTokenizer, load_digits, load_tinyshakespeare, make_lm_batch
from minigrad.data import sample_variable_length_sequences, split_micro_batches
from minigrad.nn import functional as F
from minigrad.optim import SGD, Adam, AdamW, GradientAccumulator, clip_grad_norm_
from minigrad.optim import lr_scheduler
from minigrad.testing import max_rel_diff

from .loops import (GradientRecorder, ce_loss, classification_batches, make_mlp, params,
                    train_accumulated, train_full)

OPTIMIZERS = {
    "SGD": (lambda ps: SGD(ps, lr=0.1), 1e-12),
    "SGD-momentum-wd": (lambda ps: SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01), 1e-12),
    "Adam": (lambda ps: Adam(ps, lr=0.01), 1e-9),
    "AdamW": (lambda ps: AdamW(ps, lr=0.01, weight_decay=0.1), 1e-9),
}


def recorded_gradients(model, batches, k=None, loss_fn=ce_loss, weight_by_items=True,
                       **acc_options):
    """The gradients an optimizer receives for each batch: full batch (k None)
    or accumulated over k micro-batches."""
    rec = GradientRecorder(model.parameters())
    if k is None:
        train_full(model, rec, batches, loss_fn, max_grad_norm=acc_options.get("max_grad_norm"))
    else:
        acc = GradientAccumulator(rec, k, **acc_options)
        train_accumulated(acc, model, batches, k, loss_fn, weight_by_items)
    return rec.seen


# ------------------------------------------------------------------- the MLP
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_mlp_gradients_equal_full_batch(float64, k):
    batches = classification_batches(3, 20)            # k = 8: sizes 3,3,3,3,2,2,2,2
    full = recorded_gradients(make_mlp(), batches)
    acc = recorded_gradients(make_mlp(), batches, k)
    for a, b in zip(acc, full):
        assert max_rel_diff(a, b) <= 1e-12


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_mlp_parameters_equal_full_batch_over_20_updates(float64, name, k):
    make_opt, tol = OPTIMIZERS[name]
    batches = classification_batches(20, 20, seed=1)
    ref, model = make_mlp(), make_mlp()
    full_losses = train_full(ref, make_opt(ref.parameters()), batches)
    opt = make_opt(model.parameters())
    acc = GradientAccumulator(opt, k)
    window_losses = train_accumulated(acc, model, batches, k)
    assert acc.updates == 20 and acc.micro_step == 0
    assert max_rel_diff(params(model), params(ref)) <= tol
    # the logged loss is the full batch's mean loss, whatever k is
    np.testing.assert_allclose(window_losses, full_losses, rtol=tol)
    if name.startswith("Adam"):
        assert all(opt.state[p]["step"] == 20 for p in model.parameters())
    # and training did move the parameters (the comparison is not vacuous)
    assert max_rel_diff(params(model), params(make_mlp())) > 1e-2


def test_digits_mlp_adamw_equals_full_batch(float64):
    """The bundled digits: batches of 50 as micro-batches of 13, 13, 12, 12."""
    x, y = load_digits()
    batches = [(x[i:i + 50], y[i:i + 50]) for i in range(0, 500, 50)]

    def model():
        return make_mlp(seed=3, n_in=64, hidden=16, n_out=10)

    ref, ours = model(), model()
    full_losses = train_full(ref, AdamW(ref.parameters(), lr=3e-3), batches)
    acc = GradientAccumulator(AdamW(ours.parameters(), lr=3e-3), 4)
    window_losses = train_accumulated(acc, ours, batches, 4)
    assert max_rel_diff(params(ours), params(ref)) <= 1e-9
    np.testing.assert_allclose(window_losses, full_losses, rtol=1e-12)
    assert full_losses[-1] < full_losses[0]             # it learns


# ------------------------------------------------------- unequal micro-batches
def _split_100(batch):
    x, y = batch
    cuts = [0, 32, 64, 96, 100]                         # 100 = 32 + 32 + 32 + 4
    return [(x[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _accumulate_parts(model, parts, weight_by_items):
    rec = GradientRecorder(model.parameters())
    acc = GradientAccumulator(rec, len(parts))
    for x, y in parts:
        acc.backward(ce_loss(model, x, y), num_items=len(x) if weight_by_items else None)
        acc.step()
    return rec.seen[0]


def test_unequal_micro_batches_need_num_items(float64):
    batch = classification_batches(1, 100, seed=2)[0]
    full = recorded_gradients(make_mlp(), [batch])[0]
    weighted = _accumulate_parts(make_mlp(), _split_100(batch), weight_by_items=True)
    classic = _accumulate_parts(make_mlp(), _split_100(batch), weight_by_items=False)
    assert max_rel_diff(weighted, full) <= 1e-12
    assert max_rel_diff(classic, full) > 1e-2
    # classic = the plain mean of the four micro-batch mean gradients (divide by k)
    per_part = [recorded_gradients(make_mlp(), [part])[0] for part in _split_100(batch)]
    mean_of_parts = [sum(g[i] for g in per_part) / 4 for i in range(len(full))]
    assert max_rel_diff(classic, mean_of_parts) <= 1e-12


# ---------------------------------------------------- tokens and padding
def _lm_model(vocab):
    minigrad.manual_seed(4)
    return nn.Sequential(nn.Embedding(vocab, 8), nn.Tanh(), nn.Linear(8, vocab))


def _token_loss(model, inputs, targets):
    """Mean cross-entropy over the non-padded tokens of (B, T) inputs/targets."""
    logits = model(minigrad.tensor(inputs))                 # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=-100)


def test_token_level_cross_entropy_over_padded_sequences(float64):
    tok = CharTokenizer(load_tinyshakespeare()[:5000])
    ids = tok.encode(load_tinyshakespeare()[:5000])
    seqs = sample_variable_length_sequences(ids, 16, 3, 40, np.random.default_rng(5))
    full_inputs, full_targets = make_lm_batch(seqs)
    ref = _lm_model(tok.vocab_size)
    full = GradientRecorder(ref.parameters())
    _token_loss(ref, full_inputs, full_targets).backward()
    full.step()

    def accumulate(weight_by_items):
        m = _lm_model(tok.vocab_size)
        rec = GradientRecorder(m.parameters())
        acc = GradientAccumulator(rec, 4)
        for part in np.array_split(np.arange(16), 4):
            # each micro-batch is padded to its own longest sequence
            inputs, targets = make_lm_batch([seqs[i] for i in part])
            n_tokens = int((targets != -100).sum())
            acc.backward(_token_loss(m, inputs, targets),
                         num_items=n_tokens if weight_by_items else None)
            acc.step()
        return rec.seen[0], acc.window_loss

    weighted, window_loss = accumulate(True)
    naive, _ = accumulate(False)
    assert max_rel_diff(weighted, full.seen[0]) <= 1e-12
    assert max_rel_diff(naive, full.seen[0]) > 1e-2
    full_loss = _token_loss(_lm_model(tok.vocab_size), full_inputs, full_targets).item()
    assert window_loss == pytest.approx(full_loss, rel=1e-12)


def test_every_token_gets_weight_one_over_110(float64):
    """Micro-batches of 10 and 100 scored tokens.  The logits are the parameters
    themselves, all zero, so the gradient at a token's target logit is
    w · (1/V - 1), where w is that token's weight in the loss."""
    V, rng = 5, np.random.default_rng(6)
    micro = [[rng.integers(0, V, 11)],                                 # 10 targets
             [rng.integers(0, V, n) for n in (41, 31, 21, 11)]]        # 100 targets

    def token_weights(weight_by_items):
        batches = [make_lm_batch(seqs) for seqs in micro]
        logits = [minigrad.zeros(*t.shape, V, requires_grad=True) for _, t in batches]
        rec = GradientRecorder(logits)
        acc = GradientAccumulator(rec, 2)
        for z, (_, targets) in zip(logits, batches):
            n = int((targets != -100).sum())
            loss = F.cross_entropy(z.reshape(-1, V), targets.reshape(-1))
            acc.backward(loss, num_items=n if weight_by_items else None)
            acc.step()
        weights = []
        for g, (_, targets) in zip(rec.seen[0], batches):
            g, t = g.reshape(-1, V), targets.reshape(-1)
            real = t != -100
            at_target = g[np.arange(t.size), np.where(real, t, 0)]
            weights.append(np.where(real, at_target / (1.0 / V - 1.0), np.nan))
            assert np.all(g[~real] == 0)                             # padding: weight 0
        return [w[~np.isnan(w)] for w in weights]

    small, large = token_weights(True)
    assert small.size == 10 and large.size == 100
    np.testing.assert_allclose(np.concatenate([small, large]), 1 / 110, rtol=1e-12)
    small, large = token_weights(False)                  # naive: 1/20 and 1/200
    np.testing.assert_allclose(small, 1 / 20, rtol=1e-12)
    np.testing.assert_allclose(large, 1 / 200, rtol=1e-12)


# --------------------------------------------- what acts once per update
def test_clipping_once_per_window_equals_full_batch(float64):
    batches = classification_batches(3, 24, seed=7)
    full = recorded_gradients(make_mlp(), batches, max_grad_norm=0.05)
    ours = recorded_gradients(make_mlp(), batches, 4, max_grad_norm=0.05)
    for a, b in zip(ours, full):
        assert max_rel_diff(a, b) <= 1e-12
    # clipping each micro-batch's gradient instead is a different update
    model = make_mlp()
    summed = None
    for x, y in split_micro_batches(batches[0], 4):
        model.zero_grad()
        ce_loss(model, x, y).backward()
        clip_grad_norm_(model.parameters(), 0.05)
        grads = [p.grad.numpy() / 4 for p in model.parameters()]
        summed = grads if summed is None else [s + g for s, g in zip(summed, grads)]
    assert max_rel_diff(summed, full[0]) > 1e-2


def test_last_grad_norm_is_the_full_batch_norm(float64):
    batch = classification_batches(1, 24, seed=8)[0]
    ref = make_mlp()
    ce_loss(ref, *batch).backward()
    full_norm = np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in ref.parameters()))
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 3, max_grad_norm=1e-3)
    train_accumulated(acc, model, [batch], 3)
    assert acc.last_grad_norm == pytest.approx(full_norm, rel=1e-12)


def test_scheduler_steps_once_per_update(float64):
    batches = classification_batches(6, 16, seed=9)
    ref, model = make_mlp(), make_mlp()
    ref_opt = SGD(ref.parameters(), lr=0.2, momentum=0.9)
    ref_sched = lr_scheduler.CosineAnnealingLR(ref_opt, T_max=6)
    train_full(ref, ref_opt, batches, scheduler=ref_sched)
    opt = SGD(model.parameters(), lr=0.2, momentum=0.9)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    acc = GradientAccumulator(opt, 4, scheduler=sched)
    train_accumulated(acc, model, batches, 4)
    assert sched.last_epoch == acc.updates == 6
    assert sched.get_last_lr() == ref_sched.get_last_lr()
    assert max_rel_diff(params(model), params(ref)) <= 1e-12


@pytest.mark.parametrize("cls", [SGD, AdamW])
def test_weight_decay_applies_once_per_update(float64, cls):
    """With a loss whose gradient is zero, only weight decay moves the weights:
    after one window of k = 4 micro-batches, by one factor, not four."""
    w = minigrad.tensor([2.0, -3.0], requires_grad=True)
    opt = cls([w], lr=0.1, weight_decay=0.5)
    acc = GradientAccumulator(opt, 4)
    for _ in range(4):
        acc.backward((w * 0.0).sum(), num_items=3)
        acc.step()
    expected = np.array([2.0, -3.0]) * (1 - 0.1 * 0.5)
    if cls is SGD:
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-15)
    else:   # AdamW: decoupled decay, and the Adam part moves by 0 (zero gradient)
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-15)
        assert opt.state[w]["step"] == 1


# ------------------------------------------------------------- layers
def test_dropout_with_per_example_masks_equals_full_batch(float64):
    batches = classification_batches(4, 20, seed=10)

    def loss_at(step, offset):
        def loss_fn(model, x, y):
            with nn.dropout_context(step=step, example_index=np.arange(offset, offset + len(x))):
                return ce_loss(model, x, y)
        return loss_fn

    ref = make_mlp(dropout=0.4)
    ref_opt = SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step, batch in enumerate(batches):
        train_full(ref, ref_opt, [batch], loss_at(step, 0))
    model = make_mlp(dropout=0.4)
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1, momentum=0.9), 3)
    for step, batch in enumerate(batches):
        offset = 0
        for x, y in split_micro_batches(batch, 3):
            acc.backward(loss_at(step, offset)(model, x, y), num_items=len(x))
            acc.step()
            offset += len(x)
    assert max_rel_diff(params(model), params(ref)) <= 1e-12
    # the masks do drop units: without dropout the result differs
    plain = make_mlp()
    train_full(plain, SGD(plain.parameters(), lr=0.1, momentum=0.9), batches)
    assert max_rel_diff(params(plain), params(ref)) > 1e-3


@pytest.mark.parametrize("norm", [nn.LayerNorm, lambda c: nn.GroupNorm(2, c)],
                         ids=["LayerNorm", "GroupNorm"])
def test_layer_and_group_norm_equal_full_batch(float64, norm):
    batches = classification_batches(5, 16, seed=11)
    ref, model = make_mlp(norm=norm), make_mlp(norm=norm)
    train_full(ref, Adam(ref.parameters(), lr=0.01), batches)
    acc = GradientAccumulator(Adam(model.parameters(), lr=0.01), 4)
    train_accumulated(acc, model, batches, 4)
    assert max_rel_diff(params(model), params(ref)) <= 1e-9


class GhostBatchMLP(nn.Module):
    """The MLP with BatchNorm applied to each group of rows separately: the
    full-batch model whose gradient accumulation actually computes."""

    def __init__(self, sizes):
        super().__init__()
        self.net = make_mlp(norm=nn.BatchNorm1d)
        self.sizes = sizes

    def forward(self, x):
        h = self.net[0](x)
        cuts = np.cumsum([0] + list(self.sizes))
        h = minigrad.concatenate([self.net[1](h[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])
        for layer in list(self.net)[2:]:
            h = layer(h)
        return h


def test_batchnorm_in_training_is_ghost_batch_norm(float64):
    batches = classification_batches(3, 24, seed=12)
    full = recorded_gradients(make_mlp(norm=nn.BatchNorm1d), batches)
    ours = recorded_gradients(make_mlp(norm=nn.BatchNorm1d), batches, 4)
    ghost = recorded_gradients(GhostBatchMLP([6, 6, 6, 6]), batches)
    for a, b, c in zip(ours, full, ghost):
        assert max_rel_diff(a, b) > 1e-2                # not the full-batch gradient...
        assert max_rel_diff(a, c) <= 1e-12              # ...but exactly ghost-batch BN's


def test_batchnorm_in_eval_equals_full_batch(float64):
    batches = classification_batches(5, 16, seed=13)
    ref, model = make_mlp(norm=nn.BatchNorm1d), make_mlp(norm=nn.BatchNorm1d)
    for m in (ref, model):
        m[1].running_mean.data[...] = np.linspace(-0.5, 0.5, 8)
        m[1].running_var.data[...] = np.linspace(0.5, 2.0, 8)
        m.eval()
    train_full(ref, SGD(ref.parameters(), lr=0.1, momentum=0.9), batches)
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1, momentum=0.9), 4)
    train_accumulated(acc, model, batches, 4)
    assert max_rel_diff(params(model), params(ref)) <= 1e-12


# --------------------------------------------- BatchNorm running statistics
def _bn_running(model):
    bn = model[1]
    return [bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()]


def test_merged_running_statistics_equal_full_batch_steps(float64):
    """lr = 0 keeps the weights fixed, so every window's statistics can be
    compared with one full-batch forward: 3 windows of k = 4, then a short
    window of 2 micro-batches applied by flush()."""
    batches = classification_batches(4, 24, seed=14)
    half = tuple(z[:12] for z in batches[3])
    ref = make_mlp(norm=nn.BatchNorm1d)
    train_full(ref, SGD(ref.parameters(), lr=0.0), batches[:3] + [half])
    merged = make_mlp(norm=nn.BatchNorm1d)
    acc = GradientAccumulator(SGD(merged.parameters(), lr=0.0), 4, model=merged)
    train_accumulated(acc, merged, batches[:3], 4)
    for x, y in split_micro_batches(half, 2):
        acc.backward(ce_loss(merged, x, y), num_items=len(x))
        acc.step()
    assert merged[1].get_pending_stats() is not None
    assert acc.flush()
    assert merged[1].get_pending_stats() is None
    ghost = make_mlp(norm=nn.BatchNorm1d)                 # the default: per micro-batch
    train_accumulated(GradientAccumulator(SGD(ghost.parameters(), lr=0.0), 4), ghost,
                      batches[:3], 4)
    assert merged[1].merge_running_stats and not ghost[1].merge_running_stats
    assert int(merged[1].num_batches_tracked.item()) == 4
    assert int(ghost[1].num_batches_tracked.item()) == 12
    assert max_rel_diff(_bn_running(merged), _bn_running(ref)) <= 1e-12
    assert max_rel_diff(_bn_running(ghost), _bn_running(ref)) > 1e-3


def test_merged_running_statistics_of_one_window_are_exact(float64):
    batch = classification_batches(1, 24, seed=15)[0]
    ref = make_mlp(norm=nn.BatchNorm1d)
    train_full(ref, SGD(ref.parameters(), lr=0.1), [batch])
    merged = make_mlp(norm=nn.BatchNorm1d)
    acc = GradientAccumulator(SGD(merged.parameters(), lr=0.1), 4, model=merged)
    train_accumulated(acc, merged, [batch], 4)
    assert max_rel_diff(_bn_running(merged), _bn_running(ref)) <= 1e-12


def test_merged_running_statistics_worked_example(float64):
    """x = [1, 2, 4, 8] as [1, 2] + [4, 8], momentum 0.1."""
    def run(merge):
        bn = nn.BatchNorm1d(1)
        acc = GradientAccumulator(SGD(bn.parameters(), lr=0.0), 2,
                                  model=bn if merge else None)
        for part in ([1.0, 2.0], [4.0, 8.0]):
            acc.backward(bn(minigrad.tensor(np.array(part)[:, None])).mean(), num_items=2)
            acc.step()
        return bn.running_mean.item(), bn.running_var.item()

    mean, var = run(True)
    assert mean == pytest.approx(0.375, rel=1e-14)
    assert var == pytest.approx(1.8583333333333333, rel=1e-14)
    mean, var = run(False)                                  # ghost batch (default)
    assert mean == pytest.approx(0.735, rel=1e-14)
    assert var == pytest.approx(1.655, rel=1e-14)


# --------------------------------------------------------- the last window
def test_short_final_window_is_normalized_by_what_it_holds(float64):
    data = classification_batches(1, 70, seed=16)[0]
    parts = split_micro_batches(data, 7)                   # 10 each; k = 4: 4 + 3
    ref = make_mlp()
    first = tuple(np.concatenate(z) for z in zip(*parts[:4]))
    last = tuple(np.concatenate(z) for z in zip(*parts[4:]))
    train_full(ref, Adam(ref.parameters(), lr=0.01), [first, last])

    model = make_mlp()
    acc = GradientAccumulator(Adam(model.parameters(), lr=0.01), 4)
    for x, y in parts:
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    assert (acc.updates, acc.micro_step) == (1, 3)
    assert acc.flush() is True
    assert (acc.updates, acc.micro_step) == (2, 0)
    assert acc.flush() is False                            # nothing pending
    assert max_rel_diff(params(model), params(ref)) <= 1e-9


def test_accumulation_on_device(device, float64):
    batches = classification_batches(2, 12, seed=17)

    def loss_fn(model, x, y):
        return F.cross_entropy(model(minigrad.tensor(x, device=device)),
                               minigrad.tensor(y, device=device))

    ref, model = make_mlp().to(device), make_mlp().to(device)
    train_full(ref, AdamW(ref.parameters(), lr=0.01), batches, loss_fn)
    acc = GradientAccumulator(AdamW(model.parameters(), lr=0.01), 3, max_grad_norm=10.0)
    train_accumulated(acc, model, batches, 3, loss_fn)
    assert all(p.device == device for p in model.parameters())
    assert max_rel_diff(params(model), params(ref)) <= 1e-9
