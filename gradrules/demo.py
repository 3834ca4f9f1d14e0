"""``gradrules demo``: train a small decoder-only transformer made of
gradrules primitives, then check its second derivatives.

The model (``transformer``) is written once against a table of ops: with
``GRADRULES`` every op is a gradrules primitive (embedding, rms_norm with a
weight offset, rope, grouped-query causal attention, silu_gated MLP, matmul,
residual_add, cross_entropy); with ``PLAIN`` it is the same model in plain
jax.numpy, made of each op's registered reference composition. Training runs
on the character-level text shipped in ``gradrules/data/corpus.txt`` with
Adam. Afterwards, in float64:

* a Hessian-vector product of the loss, forward over reverse
  (``jax.jvp(jax.grad(loss))``), gradrules against plain jax.numpy;
* ``jax.jacfwd`` of the logits with respect to one embedding row, through
  the whole model, gradrules against plain jax.numpy.

With ``--devices`` the same model (its collectives placed by a ``Layout``)
trains on a mesh instead, data and tensor parallel, and is compared with one
device (``demo_parallel``).

    gradrules demo                       # about a minute on a laptop CPU
    gradrules demo --steps 50 --d-model 64 --layers 1
    gradrules demo --devices 8 --mesh 2x4 --steps 20
    gradrules demo --processes 2 --devices 4 --steps 20
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from types import SimpleNamespace
from typing import Any, TextIO

import numpy as np

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ._jax import iter_eqns
from .cli import OneLineParser
from .core.registry import get_op, is_catalog_primitive
from .primitives.arithmetic import residual_add
from .primitives.attention import attention
from .primitives.compare import where
from .primitives.gated import silu_gated
from .primitives.gather import embedding
from .primitives.linalg import matmul
from .primitives.loss import cross_entropy
from .primitives.norm import rms_norm
from .primitives.rope import rope
from .primitives.shape import reshape

Params = dict[str, Any]
EPS = 1e-6
NORM_OFFSET = 1.0      # rms_norm gains are stored as gamma - 1 (zeros at init)


# ------------------------------------------------------------------- ops
GRADRULES = SimpleNamespace(
    embedding=embedding, rms_norm=rms_norm, rope=rope, attention=attention,
    silu_gated=silu_gated, matmul=matmul, reshape=reshape, residual_add=residual_add,
    cross_entropy=cross_entropy, where=where)
# The same table in plain jax.numpy: each op's registered reference
# composition (``get_op(name).reference``), the oracle gradrules.check tests
# the op against. Their call conventions match the public functions'.
PLAIN = SimpleNamespace(**{name: get_op(name).reference for name in vars(GRADRULES)})


# ----------------------------------------------------------------- model
@dataclass(frozen=True)
class Config:
    steps: int = 300
    d_model: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    seq: int = 128
    batch: int = 16
    seed: int = 0
    lr: float = 3e-3

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def ffn(self) -> int:
        return 64 * math.ceil(8 * self.d_model / 3 / 64)


def init_params(cfg: Config, vocab: int, key: jax.Array) -> Params:
    """Gaussian weights scaled by 1/sqrt(fan_in), norm gains 0 (+ NORM_OFFSET)."""
    d, hd, f = cfg.d_model, cfg.head_dim, cfg.ffn
    shapes = {"wq": (d, cfg.heads * hd), "wk": (d, cfg.kv_heads * hd),
              "wv": (d, cfg.kv_heads * hd), "wo": (cfg.heads * hd, d), "w_gate": (d, f),
              "w_up": (d, f), "w_down": (f, d)}
    keys = iter(jax.random.split(key, 2 + cfg.layers * len(shapes)))

    def dense(shape: tuple[int, ...]) -> jax.Array:
        return jax.random.normal(next(keys), shape, jnp.float32) * shape[0] ** -0.5

    layers = []
    for _ in range(cfg.layers):
        layer = {n: dense(s) for n, s in shapes.items()}
        layer["attn_norm"] = layer["mlp_norm"] = jnp.zeros((d,), jnp.float32)
        layers.append(layer)
    return {"embed": jax.random.normal(next(keys), (vocab, d), jnp.float32),
            "layers": layers, "final_norm": jnp.zeros((d,), jnp.float32),
            "head": dense((d, vocab))}


class Layout:
    """Where the model's collectives go. On one device (this class) there
    are none: the embedding is a lookup, a row-parallel matmul's partial sums
    need no reduction, and the loss is cross_entropy. The tensor-parallel
    layout (``demo_parallel.Megatron``) overrides the three."""

    def embed(self, table: Any, ids: Any, ops: SimpleNamespace) -> Any:
        return ops.embedding(ids, table)

    def all_reduce(self, x: Any) -> Any:
        return x

    def kv_heads(self, kv: Any, q_heads: int, cfg: Config) -> Any:
        """The key/value heads ``[B, S, kv, hd]`` that this device's
        ``q_heads`` query heads attend with (on one device, all of them)."""
        return kv

    def loss(self, logits: Any, labels: Any, ops: SimpleNamespace) -> Any:
        return ops.cross_entropy(logits, labels)


ONE_DEVICE = Layout()


def transformer(params: Params, ids: Any, cfg: Config, ops: SimpleNamespace,
                layout: Layout = ONE_DEVICE) -> Any:
    """Logits [B, S, vocab] of a pre-norm decoder-only transformer. The head
    counts come from the weights' shapes, so the same code runs on a tensor-
    parallel shard of them (its heads, its slice of the MLP and of the
    vocabulary), with ``layout``'s collectives."""
    b, s = ids.shape
    hd = cfg.head_dim

    def norm(x: Any, gamma: Any) -> Any:
        return ops.rms_norm(x, gamma, eps=EPS, weight_offset=NORM_OFFSET)

    def heads(x: Any, w: Any) -> Any:
        return ops.reshape(ops.matmul(x, w), (b, s, np.shape(w)[1] // hd, hd))

    x = layout.embed(params["embed"], ids, ops)
    for layer in params["layers"]:
        h = norm(x, layer["attn_norm"])
        q = ops.rope(heads(h, layer["wq"]))
        k = layout.kv_heads(ops.rope(heads(h, layer["wk"])), q.shape[2], cfg)
        v = layout.kv_heads(heads(h, layer["wv"]), q.shape[2], cfg)
        a = ops.attention(q, k, v, causal=True)
        a = ops.reshape(a, (b, s, np.shape(layer["wq"])[1]))
        x = ops.residual_add(x, layout.all_reduce(ops.matmul(a, layer["wo"])))
        h = norm(x, layer["mlp_norm"])
        gated = ops.silu_gated(ops.matmul(h, layer["w_gate"]), ops.matmul(h, layer["w_up"]))
        x = ops.residual_add(x, layout.all_reduce(ops.matmul(gated, layer["w_down"])))
    return ops.matmul(norm(x, params["final_norm"]), params["head"])


def loss_fn(params: Params, ids: Any, labels: Any, cfg: Config, ops: SimpleNamespace,
            layout: Layout = ONE_DEVICE) -> Any:
    return layout.loss(transformer(params, ids, cfg, ops, layout), labels, ops)


# ------------------------------------------------------------------ data
def load_corpus() -> str:
    return (resources.files("gradrules") / "data" / "corpus.txt").read_text(encoding="utf-8")


@dataclass
class Data:
    """Character ids of the corpus: the first 95% to train on, the rest held out."""

    chars: str
    train: np.ndarray
    held_out: np.ndarray

    @classmethod
    def from_text(cls, text: str) -> Data:
        chars = "".join(sorted(set(text)))
        lookup = {c: i for i, c in enumerate(chars)}
        ids = np.array([lookup[c] for c in text], np.int32)
        cut = int(len(ids) * 0.95)
        return cls(chars, ids[:cut], ids[cut:])

    @property
    def vocab(self) -> int:
        return len(self.chars)

    def unigram_entropy(self) -> float:
        """Entropy (nats) of the character frequencies: the loss of the best
        model that ignores context."""
        p = np.bincount(self.train, minlength=self.vocab) / len(self.train)
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    def batch(self, rng: np.random.Generator, batch: int, seq: int, held_out: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
        ids = self.held_out if held_out else self.train
        starts = rng.integers(0, len(ids) - seq - 1, batch)
        windows = np.stack([ids[s:s + seq + 1] for s in starts])
        return windows[:, :-1], windows[:, 1:]

    def decode(self, ids: Any) -> str:
        return "".join(self.chars[int(i)] for i in ids)


# -------------------------------------------------------------- training
def adam(cfg: Config) -> tuple[Callable[..., Any], Callable[..., Any]]:
    b1, b2, eps = 0.9, 0.95, 1e-8
    warmup = max(1, min(30, cfg.steps // 10))

    def init(params: Params) -> Any:
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return zeros, zeros, jnp.zeros((), jnp.int32)

    def update(params: Params, grads: Params, state: Any) -> tuple[Params, Any]:
        m, v, t = state
        t = t + 1
        frac = jnp.minimum(t.astype(jnp.float32) / warmup, 1.0)
        decay = 0.1 + 0.45 * (1 + jnp.cos(jnp.pi * jnp.minimum(t / cfg.steps, 1.0)))
        lr = cfg.lr * frac * decay.astype(jnp.float32)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1 = 1 - b1 ** t.astype(jnp.float32)
        c2 = 1 - b2 ** t.astype(jnp.float32)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return params, (m, v, t)

    return init, update


def train_step(cfg: Config, loss: Callable[..., Any]) -> tuple[Callable[..., Any],
                                                              Callable[..., Any]]:
    """Adam's ``init`` and one training step ``step(params, state, ids,
    labels) -> (params, state, loss)`` on ``loss(params, ids, labels)``."""
    init, update = adam(cfg)

    def step(params: Params, state: Any, ids: Any, labels: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, ids, labels)
        params, state = update(params, grads, state)
        return params, state, value
    return init, step


def _progress(out: TextIO, step: int, steps: int, loss: float, tok_s: float) -> None:
    width = 30
    done = int(width * step / steps)
    out.write(f"\r[{'#' * done}{'.' * (width - done)}] step {step:>4}/{steps}  "
              f"loss {loss:6.3f}  {tok_s:>9,.0f} tokens/s")
    out.flush()


def train(cfg: Config, data: Data, out: TextIO) -> tuple[Params, list[float], float]:
    """Adam on random windows; returns the params, the loss of every step and
    the tokens per second (compilation excluded)."""
    init, step = train_step(cfg, partial(loss_fn, cfg=cfg, ops=GRADRULES))
    step = jax.jit(step)
    params = init_params(cfg, data.vocab, jax.random.PRNGKey(cfg.seed))
    state = init(params)
    rng = np.random.default_rng(cfg.seed)
    losses: list[float] = []
    start, tokens = None, 0
    for i in range(cfg.steps):
        ids, labels = data.batch(rng, cfg.batch, cfg.seq)
        params, state, loss = step(params, state, ids, labels)
        losses.append(float(loss))
        if start is None:              # the first step compiles
            start = time.perf_counter()
        else:
            tokens += cfg.batch * cfg.seq
        tok_s = tokens / max(time.perf_counter() - start, 1e-9)
        _progress(out, i + 1, cfg.steps, losses[-1], tok_s)
    out.write("\n")
    return params, losses, tok_s


def held_out_loss(params: Params, cfg: Config, data: Data, batches: int = 4) -> float:
    rng = np.random.default_rng(cfg.seed + 1)
    seq = min(cfg.seq, len(data.held_out) - 2)
    f = jax.jit(lambda p, i, l: loss_fn(p, i, l, cfg, GRADRULES))
    return float(np.mean([f(params, *data.batch(rng, cfg.batch, seq, held_out=True))
                          for _ in range(batches)]))


def sample(params: Params, cfg: Config, data: Data, length: int = 160) -> str:
    """Text the model writes after a window of held-out text (temperature 0.8)."""
    window = jnp.asarray(data.held_out[:cfg.seq][None])
    logits_fn = jax.jit(lambda p, i: transformer(p, i, cfg, GRADRULES)[0, -1])
    key = jax.random.PRNGKey(cfg.seed)
    new = []
    for _ in range(length):
        key, sub = jax.random.split(key)
        nxt = jax.random.categorical(sub, logits_fn(params, window) / 0.8)
        new.append(int(nxt))
        window = jnp.concatenate([window[:, 1:], nxt.astype(window.dtype)[None, None]], 1)
    return data.decode(new)


# ------------------------------------------------------------ the checks
def _rel_err(a: Any, b: Any) -> float:
    fa, fb = (ravel_pytree(x)[0] for x in (a, b))
    return float(jnp.linalg.norm(fa - fb) / jnp.maximum(jnp.linalg.norm(fb), 1e-300))


def check_derivatives(params: Params, cfg: Config, data: Data) -> dict[str, float]:
    """float64: HVP (forward over reverse) of the loss and jacfwd of the logits
    with respect to one embedding row, gradrules against plain jax.numpy."""
    rng = np.random.default_rng(cfg.seed + 2)
    seq = min(cfg.seq, 32)
    with jax.enable_x64(True):
        p64 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), params)
        ids, labels = (jnp.asarray(x) for x in data.batch(rng, 2, seq))
        direction = jax.tree_util.tree_map(
            lambda x: jnp.asarray(rng.standard_normal(x.shape)), p64)

        def hvp(ops: SimpleNamespace) -> Any:
            grad = jax.grad(lambda p: loss_fn(p, ids, labels, cfg, ops))
            return jax.jvp(grad, (p64,), (direction,))[1]

        row = int(np.bincount(data.train).argmax())           # the commonest character
        is_row = np.arange(data.vocab)[:, None] == row

        def logits_of_row(ops: SimpleNamespace) -> Any:
            def f(r: Any) -> Any:
                table = ops.where(is_row, r, p64["embed"])
                return transformer({**p64, "embed": table}, ids[:1], cfg, ops)
            return jax.jacfwd(f)(p64["embed"][row])

        return {name: _rel_err(jax.jit(partial(fn, GRADRULES))(), jax.jit(partial(fn, PLAIN))())
                for name, fn in (("hvp", hvp), ("jacfwd", logits_of_row))}


def primitives_of_grad(params: Params, cfg: Config) -> tuple[list[str], list[str]]:
    """(gradrules primitives, other primitives) in the jaxpr of the loss's gradient."""
    ids = jnp.zeros((1, min(cfg.seq, 8)), jnp.int32)
    jaxpr = jax.make_jaxpr(jax.grad(lambda p: loss_fn(p, ids, ids, cfg, GRADRULES)))(params)
    ours, other = set(), set()
    for eqn in iter_eqns(jaxpr):
        (ours if is_catalog_primitive(eqn.primitive) else other).add(eqn.primitive.name)
    return sorted(ours), sorted(other)


# ------------------------------------------------------------------ main
@dataclass
class Result:
    losses: list[float]
    tokens_per_s: float
    entropy: float
    held_out: float
    errors: dict[str, float]
    primitives: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))
    tolerance: float = 1e-8

    @property
    def ok(self) -> bool:
        return all(e <= self.tolerance for e in self.errors.values())


def run(cfg: Config, out: TextIO = sys.stdout, text: str | None = None) -> Result:
    data = Data.from_text(load_corpus() if text is None else text)
    out.write(f"gradrules demo: {cfg.layers}-layer decoder-only transformer, d_model "
              f"{cfg.d_model}, {cfg.heads} heads ({cfg.kv_heads} kv heads), seq {cfg.seq}, "
              f"batch {cfg.batch}, {cfg.steps} steps\n"
              f"corpus: {len(data.train) + len(data.held_out):,} characters, vocabulary "
              f"{data.vocab}\n")
    params, losses, tok_s = train(cfg, data, out)
    entropy = data.unigram_entropy()
    result = Result(losses, tok_s, entropy, held_out_loss(params, cfg, data),
                    check_derivatives(params, cfg, data), primitives_of_grad(params, cfg))
    last = float(np.mean(losses[-10:]))
    ours, other = result.primitives
    out.write(
        f"loss: {losses[0]:.3f} -> {last:.3f} (mean of the last 10 steps), held out "
        f"{result.held_out:.3f} nats/char; unigram entropy of the corpus {entropy:.3f}\n"
        f"speed: {tok_s:,.0f} tokens/s\n"
        f"jax.grad of the loss binds {len(ours)} gradrules primitives: {', '.join(ours)}"
        + (f"; from JAX itself: {', '.join(other)}" if other else "") + "\n"
        f"float64 checks against the same model in plain jax.numpy (relative error):\n"
        f"  Hessian-vector product, forward over reverse: {result.errors['hvp']:.2e}\n"
        f"  jax.jacfwd of the logits w.r.t. one embedding row: {result.errors['jacfwd']:.2e}\n"
        f"sample: {sample(params, cfg, data)!r}\n"
        f"{'ok' if result.ok else 'FAILED'}\n")
    return result


def _parser() -> OneLineParser:
    d = Config()
    p = OneLineParser(prog="gradrules demo", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=d.steps, help="training steps")
    p.add_argument("--d-model", type=int, default=d.d_model, help="model width")
    p.add_argument("--layers", type=int, default=d.layers, help="transformer blocks")
    p.add_argument("--heads", type=int, default=d.heads, help="query heads")
    p.add_argument("--kv-heads", type=int, default=d.kv_heads, help="key/value heads")
    p.add_argument("--seq", type=int, default=d.seq, help="characters per sequence")
    p.add_argument("--batch", type=int, default=d.batch, help="sequences per step")
    p.add_argument("--seed", type=int, default=d.seed, help="random seed")
    p.add_argument("--devices", type=int, help="train on a mesh of this many devices (per "
                   "process; simulated CPU devices on a CPU-only machine) and compare with "
                   "one device")
    p.add_argument("--mesh", metavar="DATAxMODEL", help="the mesh's data and model axis sizes "
                   "(default: 2 x the rest)")
    p.add_argument("--processes", type=int, default=1, help="local processes joined by "
                   "jax.distributed, each with --devices devices")
    p.add_argument("--process-id", type=int, help=argparse.SUPPRESS)
    return p


def _parse(argv: list[str] | None) -> tuple[Config, Any]:
    p = _parser()
    a = p.parse_args(argv)
    for name in ("steps", "d_model", "layers", "heads", "kv_heads", "seq", "batch",
                 "processes"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.d_model % a.heads or (a.d_model // a.heads) % 2:
        p.error("--d-model must be a multiple of --heads with an even head size")
    if a.heads % a.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
    if a.devices is not None and a.devices < 1:
        p.error("--devices must be >= 1")
    if (a.mesh is not None or a.processes > 1) and a.devices is None:
        p.error("--mesh and --processes need --devices")
    if a.devices is not None:
        total = a.devices * a.processes
        if a.mesh is None:
            data = 2 if total % 2 == 0 else 1
            a.mesh = f"{data}x{total // data}"
        sizes = a.mesh.lower().split("x")
        if len(sizes) != 2 or not all(x.isdigit() and int(x) > 0 for x in sizes):
            p.error(f"--mesh must be DATAxMODEL (e.g. 2x4), got {a.mesh!r}")
        if int(sizes[0]) * int(sizes[1]) != total:
            p.error(f"--mesh {a.mesh} has {int(sizes[0]) * int(sizes[1])} devices; "
                    f"--devices {a.devices} x --processes {a.processes} is {total}")
        a.mesh = (int(sizes[0]), int(sizes[1]))
    cfg = Config(a.steps, a.d_model, a.layers, a.heads, a.kv_heads, a.seq, a.batch, a.seed)
    return cfg, a


def parse_args(argv: list[str] | None = None) -> Config:
    """The model and training flags of ``gradrules demo``."""
    return _parse(argv)[0]


def main(argv: list[str] | None = None) -> int:
    """The ``gradrules demo`` command: 0 when the derivative checks agree (on
    a mesh: when the loss curves agree with one device's)."""
    cfg, a = _parse(argv)
    if a.devices is None:
        return 0 if run(cfg).ok else 1
    from . import demo_parallel
    mesh = demo_parallel.Mesh(a.devices * a.processes, *a.mesh, processes=a.processes)
    if a.processes > 1 and a.process_id is None:
        return demo_parallel.launch(sys.argv[2:] if argv is None else list(argv), mesh)
    # before JAX starts its CPU backend (importing gradrules does not start it)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={a.devices}").strip()
    if a.process_id is not None:
        demo_parallel.join(a.process_id, mesh)
    figures = demo_parallel.run(cfg, mesh, process=a.process_id or 0)
    return 0 if figures["diff"] < demo_parallel.TOLERANCE else 1
