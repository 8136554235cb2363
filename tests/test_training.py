"""Training (Section 5.1, Appendix E.2): one TrainConfig, the loss falls, exact resume, the entropy rate,
the learning error of networks, and the CLI."""

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import json

import numpy as np
import torch

from mdmt.constructions.reverse.learning import learning_error
from mdmt.runtime.validation import MASK
from mdmt.empirical.metrics import entropy_rate
from mdmt.empirical.sampling import MDMDenoiser, ar_sample, ddpm_cache
from mdmt.empirical.checkpoint import load_checkpoint
from mdmt.empirical.train import TrainConfig, load_model, train
from tests.helpers_empirical import _bigram, _cfg, _pi_linear, _random_model

torch.set_num_threads(1)


def _train_cfg(model, steps, batch, lr=3e-4, seed=0, **kw):
    return TrainConfig(model=model, train_steps=steps, batch=batch, lr=lr, seed=seed, **kw)


@pytest.mark.integration
def test_loss_falls_on_a_tiny_run():
    lang = _bigram()
    res = train(_train_cfg(_cfg(3), 150, 32, lr=3e-3, eval_every=30, val_size=128), lang, progress=False, device="cpu")
    first, last = np.mean(res.losses[:5]), np.mean(res.losses[-5:])
    assert last < first - 0.04, (first, last)
    # the paired gap (NELBO minus exact -ln q of the same sequences) falls, and stays >= 0 up to its interval
    assert res.history[-1]["val_gap_ci"][1] < res.history[0]["val_gap"]
    assert res.val_gap_ci[0] <= res.val_gap <= res.val_gap_ci[1] and res.val_gap_ci[1] > 0
    assert res.val_gap == pytest.approx(res.val_nll - res.val_exact_nll)
    assert 0 < res.cpu_seconds and res.history[-1]["cpu_seconds"] <= res.cpu_seconds
    ar = train(_train_cfg(_cfg(3, causal=True), 150, 32, lr=3e-3, eval_every=150, val_size=128), lang, progress=False,
               device="cpu")
    assert np.mean(ar.losses[-5:]) < np.mean(ar.losses[:5]) - 0.1


def _no_cpu(history):
    return [{k: v for k, v in h.items() if k != "cpu_seconds"} for h in history]


def test_resume_is_identical(tmp_path):
    lang = _bigram()
    cfg = _train_cfg(_cfg(3), 12, 8, lr=1e-3, seed=7, eval_every=4, val_size=32)
    kw = dict(progress=False, device="cpu")
    full = train(cfg, lang, ckpt_path=tmp_path / "a.pt", **kw)
    part = train(cfg, lang, ckpt_path=tmp_path / "b.pt", stop_at=5, **kw)
    assert part.step == 5
    rest = train(cfg, lang, ckpt_path=tmp_path / "b.pt", resume=True, **kw)
    assert rest.step == 12 and rest.losses == full.losses and _no_cpu(rest.history) == _no_cpu(full.history)
    for (k, a), (_, b) in zip(full.model.state_dict().items(), rest.model.state_dict().items()):
        assert torch.equal(a, b), k
    assert torch.equal(load_model(tmp_path / "b.pt").tok.weight, full.model.tok.weight)
    # the whole configuration is in the checkpoint, and another one is refused naming the field
    assert load_checkpoint(tmp_path / "b.pt")["config"] == cfg.to_dict()
    with pytest.raises(ValueError, match="config.lr"):
        train(cfg.with_(lr=2e-3), lang, ckpt_path=tmp_path / "b.pt", resume=True, **kw)
    with pytest.raises(ValueError, match="config.model.d_model"):
        train(cfg.with_(model=cfg.model.with_(d_model=16)), lang, ckpt_path=tmp_path / "b.pt", resume=True, **kw)
    with pytest.raises(ValueError, match="language_digest"):  # another language of the same vocabulary
        from mdmt.constructions.languages import NGram

        other = NGram(2, [1 / 3] * 3, [[1 / 3] * 3] * 3)
        train(cfg, other, ckpt_path=tmp_path / "b.pt", resume=True, **kw)


def test_the_ngram_table_steps_at_table_lr_times_the_learning_rate():
    """Adam's first step moves every parameter by its group's learning rate (m / sqrt(v) = sign of the gradient)."""
    from mdmt.empirical.model import Transformer
    from mdmt.empirical.train import seed_of

    cfg = _train_cfg(_cfg(3, ngram=3), 1, 8, lr=1e-3, warmup_frac=0.0, val_size=8, table_lr=7.0)
    torch.manual_seed(seed_of(cfg.seed, 0))
    before = dict(Transformer(cfg.model).named_parameters())
    after = dict(train(cfg, _bigram(), progress=False, device="cpu").model.named_parameters())
    moved = {name: (after[name] - p).abs().max().item() for name, p in before.items()}
    assert moved.pop("ngram.logits") == pytest.approx(7e-3, rel=1e-3)
    assert max(moved.values()) == pytest.approx(1e-3, rel=1e-3)


def test_a_checkpoint_without_group_scales_resumes(tmp_path):
    """Checkpoints written before the n-gram table had its own step size saved no lr_scale in their groups."""
    lang = _bigram()
    cfg = _train_cfg(_cfg(3), 6, 8, lr=1e-3, seed=3, val_size=16)
    kw = dict(progress=False, device="cpu")
    full = train(cfg, lang, ckpt_path=tmp_path / "a.pt", **kw)
    train(cfg, lang, ckpt_path=tmp_path / "b.pt", stop_at=3, **kw)
    state = load_checkpoint(tmp_path / "b.pt")
    for group in state["optimizer"]["param_groups"]:
        del group["lr_scale"]
    from mdmt.empirical.checkpoint import save_checkpoint

    save_checkpoint(tmp_path / "b.pt", state)
    rest = train(cfg, lang, ckpt_path=tmp_path / "b.pt", resume=True, **kw)
    assert rest.losses == full.losses


def test_train_config_validates_every_field():
    model = _cfg(3)
    for bad, message in [(dict(train_steps=0), "train_steps must be >= 1"), (dict(lr=float("nan")), "lr must be"),
                         (dict(table_lr=0.0), "table_lr must be a positive finite number"),
                         (dict(lr=-1.0), "lr must be"), (dict(t_min=1.5), "t_min must be in"),
                         (dict(batch=2.5), "batch must be an integer"), (dict(language="preset:9gram"), "9gram")]:
        with pytest.raises(ValueError, match=message):
            TrainConfig(model=model, **bad)
    with pytest.raises(ValueError, match="TrainConfig.model must be a ModelConfig"):
        TrainConfig(model={"d_model": 8})
    cfg = TrainConfig(model=model, language="preset:2gram")
    assert cfg.language == "preset:2gram:0" and TrainConfig.from_dict(cfg.to_dict()) == cfg


def test_entropy_rate_exact_for_ngram_matches_brute_force():
    lang = _bigram()
    L = 4
    from itertools import product

    X = np.array(list(product(range(3), repeat=L)))
    lp = lang.log_likelihood(X)
    fin = np.isfinite(lp)
    H = -(np.exp(lp[fin]) * lp[fin]).sum()  # brute-force enumeration of all 3^4 sequences
    assert entropy_rate(lang, L)["value"] == pytest.approx(H / L, rel=1e-9)




class _OracleModel(torch.nn.Module):
    """The oracle denoiser q(x_i | x_U) wrapped as a torch module of the denoiser protocol."""

    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, X):
        return torch.as_tensor(self.lang.posterior_marginals(np.asarray(X)))


def test_learning_error_of_the_oracle_is_zero_and_of_a_random_model_is_not():
    lang = _bigram()
    oracle = _OracleModel(lang)
    le = learning_error(lang, lambda X: oracle(X).numpy(), 8, method="monte_carlo", num=64, seed=0)
    assert le["mean"] <= 1e-6 and le["max"] <= 1e-6 and le["q90"] <= 1e-6 and le["q99"] <= 1e-6
    rnd = learning_error(lang, MDMDenoiser(_random_model(V=3)), 8, method="monte_carlo", num=64, seed=0)
    assert rnd["mean"] > 1e-3 and rnd["max"] >= rnd["q99"] >= rnd["q90"]



@pytest.mark.gpu
def test_cuda_training_resume_and_sampling(tmp_path):
    """On CUDA (bf16 autocast): training runs, resumes to the same step count, samples are valid and seeded."""
    lang = _bigram()
    kw = dict(progress=False, device="cuda")
    cfg = _train_cfg(_cfg(3), 20, 16, lr=3e-3, seed=1, eval_every=10, val_size=64)
    part = train(cfg, lang, ckpt_path=tmp_path / "c.pt", stop_at=10, **kw)
    rest = train(cfg, lang, ckpt_path=tmp_path / "c.pt", resume=True, **kw)
    assert part.step == 10 and rest.step == 20 and len(rest.losses) == 20 and rest.losses[:10] == part.losses
    den = MDMDenoiser(rest.model)
    a = ddpm_cache(den, 32, 8, _pi_linear(4), seed=3, device="cuda")
    b = ddpm_cache(den, 32, 8, _pi_linear(4), seed=3, device="cuda")
    assert (a.samples != MASK).all() and set(np.unique(a.samples)) <= {0, 1, 2}
    assert np.array_equal(a.samples, b.samples)
    ar = train(_train_cfg(_cfg(3, causal=True), 5, 16, lr=3e-3, seed=1), lang, **kw)
    assert ar_sample(ar.model, 8, 8, seed=0, device="cuda").samples.shape == (8, 8)


def test_cli_train_position_encoding(tmp_path, capsys):
    from mdmt.cli import main

    common = ["train", "--language", "preset:2gram", "-L", "8", "--train-steps", "2", "--batch", "4", "--no-progress",
              "--json"]
    assert main(common + ["--positions", "learned", "--out", str(tmp_path / "a")]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["model"]["positions"] == "learned"
    assert main(common + ["--out", str(tmp_path / "b")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["model"]["positions"] == "rotary+learned" and summary["language"] == "preset:2gram:0"
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["config"] == summary["config"]
    assert main(common + ["--positions", "sinusoidal", "--out", str(tmp_path / "c")]) == 2
    assert "got 'sinusoidal'" in capsys.readouterr().err
    model = summary["config"]["model"]
    assert (model["neighbours"], model["window"], model["recurrent"], model["ngram"]) == (0, 0, 64, 4)  # tiny
    assert summary["config"]["table_lr"] == 10.0  # the tiny recipe
    assert main(common + ["--neighbours", "1", "--window", "2", "--recurrent", "3", "--ngram", "0",
                          "--out", str(tmp_path / "d")]) == 0
    model = json.loads(capsys.readouterr().out)["config"]["model"]
    assert (model["neighbours"], model["window"], model["recurrent"], model["ngram"]) == (1, 2, 3, 0)
    assert main(common + ["--window", "4", "--out", str(tmp_path / "e")]) == 2  # runs need a neighbourhood
    assert "runs inside the neighbourhood of neighbours = 0), got 4" in capsys.readouterr().err
    assert main(common + ["--window", "-1", "--out", str(tmp_path / "f")]) == 2
    assert "--window" in capsys.readouterr().err
    assert main(common + ["--recurrent", "-3", "--out", str(tmp_path / "g")]) == 2
    assert "--recurrent" in capsys.readouterr().err
