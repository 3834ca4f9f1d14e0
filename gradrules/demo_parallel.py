"""``gradrules demo --devices N --mesh DATAxMODEL`` (and ``--processes P``):
the demo transformer trained on a mesh, data parallel over ``data`` and
tensor parallel over ``model`` in the Megatron layout, then the same model
trained on one device, and the two loss curves compared.

The layout (``Megatron``, ``PARAM_SPECS``), written with ``jax.shard_map``
over the mesh and JAX's collectives, every op in the model a gradrules op:

* the embedding table is split over the vocabulary (rows): each shard looks
  its ids up with ``c_embedding`` (zero rows for ids of other shards) and a
  ``psum`` over ``model`` adds the shards' rows;
* attention heads are split over ``model``: ``wq``, ``wk``, ``wv`` by columns
  (column parallel; each shard holds whole heads, query heads with their
  key/value heads; with fewer key/value heads than shards ``wk`` and ``wv``
  are replicated and each shard slices out the ones its query heads use),
  ``wo`` by rows (row parallel), whose partial sums a ``psum`` adds;
* the MLP's ``w_gate`` / ``w_up`` by columns and ``w_down`` by rows, one
  ``psum``;
* the output projection by columns, i.e. over the vocabulary: each shard
  makes its ``[tokens, vocab / model]`` slice of the logits and
  ``vocab_parallel_cross_entropy`` reduces across the shards; no device ever
  holds the whole ``[tokens, vocab]`` logits or the whole table;
* the batch is split over ``data``; the loss is ``pmean``-ed over it, and
  ``jax.grad`` through ``shard_map`` sums the replicated weights' gradients
  over the shards.

The vocabulary is padded to a multiple of the ``model`` size (Megatron
does the same); the one-device run uses the same padded model, so the two
runs are the same computation up to float32 round-off.

With ``--processes P`` the command starts P local processes, each with
``N / P`` simulated devices, joined by ``jax.distributed.initialize`` on a
loopback address into one mesh; process 0 prints. Every wait has a timeout,
and a process that fails stops the others.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Any, TextIO

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

from .demo import GRADRULES, ONE_DEVICE, Config, Data, Layout, Params, init_params, train_step
from .demo import load_corpus, loss_fn
from .primitives.arithmetic import subtract
from .primitives.gather import c_embedding
from .primitives.parallel import vocab_parallel_cross_entropy
from .primitives.slicing import dynamic_slice

DATA, MODEL = "data", "model"
PROCESS_TIMEOUT_S = 900          # a whole run of one process
JOIN_TIMEOUT_S = 120             # jax.distributed.initialize and its barriers
TOLERANCE = 1e-4                 # largest loss difference from one device


@dataclass(frozen=True)
class Mesh:
    devices: int
    data: int
    model: int
    processes: int = 1


def param_specs(params: Params, cfg: Config, model: int) -> Any:
    """The PartitionSpec of every parameter (module docstring); ``wk`` and
    ``wv`` are replicated when there are fewer key/value heads than shards
    (``Megatron.kv_heads``)."""
    cols, rows = P(None, MODEL), P(MODEL, None)
    kv = cols if cfg.kv_heads % model == 0 else P()
    layer = {"wq": cols, "wk": kv, "wv": kv, "wo": rows, "w_gate": cols, "w_up": cols,
             "w_down": rows, "attn_norm": P(), "mlp_norm": P()}
    return {"embed": rows, "layers": [dict(layer) for _ in params["layers"]],
            "final_norm": P(), "head": cols}


class Megatron(Layout):
    """The collectives of the tensor-parallel layout, inside ``shard_map``."""

    def embed(self, table: Any, ids: Any, ops: SimpleNamespace) -> Any:
        start = jax.lax.axis_index(MODEL) * np.shape(table)[0]
        return jax.lax.psum(c_embedding(table, subtract(ids, start)), MODEL)

    def all_reduce(self, x: Any) -> Any:
        return jax.lax.psum(x, MODEL)

    def kv_heads(self, kv: Any, q_heads: int, cfg: Config) -> Any:
        """Replicated ``wk``/``wv`` (fewer kv heads than shards) give every
        kv head; this shard's ``q_heads`` query heads, ``[r q, (r + 1) q)``,
        use kv heads ``[r q / g, ...)`` with ``g = heads / kv_heads`` query
        heads per kv head: ``max(1, q / g)`` of them, sliced out."""
        if kv.shape[2] != cfg.kv_heads:          # split by columns already
            return kv
        group = cfg.heads // cfg.kv_heads
        n = max(1, q_heads // group)
        start = jax.lax.axis_index(MODEL) * q_heads // group
        zero = jnp.zeros((), start.dtype)
        return dynamic_slice(kv, (zero, zero, start, zero),
                             slice_sizes=(kv.shape[0], kv.shape[1], n, kv.shape[3]))

    def loss(self, logits: Any, labels: Any, ops: SimpleNamespace) -> Any:
        return jax.lax.pmean(vocab_parallel_cross_entropy(logits, labels, axis_name=MODEL),
                             DATA)


MEGATRON = Megatron()


def padded_vocab(vocab: int, model: int) -> int:
    return -(-vocab // model) * model


def check_layout(cfg: Config, mesh: Mesh) -> str | None:
    """What the model or mesh sizes get wrong for the layout, else None."""
    if mesh.data * mesh.model != mesh.devices:
        return f"--mesh {mesh.data}x{mesh.model} needs {mesh.data * mesh.model} devices, " \
               f"--devices is {mesh.devices}"
    if len(jax.devices()) < mesh.devices:
        return f"{mesh.devices} devices asked for, JAX sees {len(jax.devices())}"
    for name, n in (("--heads", cfg.heads), ("ffn", cfg.ffn)):
        if n % mesh.model:
            return f"{name} ({n}) must be a multiple of the model axis ({mesh.model})"
    group, per_shard = cfg.heads // cfg.kv_heads, cfg.heads // mesh.model
    if cfg.kv_heads % mesh.model and (per_shard % group and group % per_shard):
        return (f"--kv-heads ({cfg.kv_heads}): each of the {mesh.model} shards' "
                f"{per_shard} query heads must share whole key/value heads")
    if cfg.batch % mesh.data:
        return f"--batch ({cfg.batch}) must be a multiple of the data axis ({mesh.data})"
    return None


def place(x: np.ndarray, sharding: Any) -> Any:
    """A global array of the host value ``x`` (the same in every process)."""
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def _temp_bytes(jitted: Any, *args: Any) -> int:
    stats = jitted.lower(*args).compile().memory_analysis()
    return int(getattr(stats, "temp_size_in_bytes", 0)) if stats is not None else 0


@dataclass
class Run:
    losses: list[float]
    temp_bytes: int
    seconds: float


@dataclass
class Sharded:
    """The model laid out on a mesh: the jax Mesh, the params placed by
    ``specs``, the loss (``shard_map`` of the Megatron layout) and the
    sharding of a batch of tokens."""

    mesh: Any
    params: Params
    specs: Any
    loss: Any
    tokens: Any


def on_mesh(cfg: Config, vocab: int, mesh: Mesh) -> Sharded:
    """The demo model's initial params on the mesh and its sharded loss."""
    jmesh = jax.make_mesh((mesh.data, mesh.model), (DATA, MODEL),
                          axis_types=(jax.sharding.AxisType.Auto,) * 2,
                          devices=jax.devices()[:mesh.devices])
    key = jax.random.PRNGKey(cfg.seed)
    host = jax.tree_util.tree_map(np.asarray, init_params(cfg, vocab, key))
    specs = param_specs(host, cfg, mesh.model)
    shardings = jax.tree_util.tree_map(lambda s: NamedSharding(jmesh, s), specs,
                                       is_leaf=lambda s: isinstance(s, P))
    params = jax.tree_util.tree_map(place, host, shardings)

    def sharded_loss(params: Params, ids: Any, labels: Any) -> Any:
        local = partial(loss_fn, cfg=cfg, ops=GRADRULES, layout=MEGATRON)
        return jax.shard_map(local, mesh=jmesh, in_specs=(specs, P(DATA), P(DATA)),
                             out_specs=P())(params, ids, labels)

    return Sharded(jmesh, params, specs, sharded_loss, NamedSharding(jmesh, P(DATA)))


def train_on_mesh(cfg: Config, data: Data, mesh: Mesh, vocab: int) -> Run:
    sharded = on_mesh(cfg, vocab, mesh)
    init, step = train_step(cfg, sharded.loss)
    return _train(cfg, data, jax.jit(step), sharded.params, init(sharded.params),
                  lambda x: place(x, sharded.tokens))


def train_on_one_device(cfg: Config, data: Data, vocab: int) -> Run:
    device = jax.local_devices()[0]
    params = jax.device_put(init_params(cfg, vocab, jax.random.PRNGKey(cfg.seed)), device)
    init, step = train_step(cfg, partial(loss_fn, cfg=cfg, ops=GRADRULES, layout=ONE_DEVICE))
    return _train(cfg, data, jax.jit(step), params, init(params),
                  lambda x: jax.device_put(x, device))


def _train(cfg: Config, data: Data, step: Any, params: Params, state: Any, place: Any) -> Run:
    """``cfg.steps`` steps on the demo's batches (the same in every process
    and in both runs); the temp memory of the compiled step."""
    rng = np.random.default_rng(cfg.seed)
    losses: list[float] = []
    temp = None
    start = time.perf_counter()
    for _ in range(cfg.steps):
        ids, labels = (place(x) for x in data.batch(rng, cfg.batch, cfg.seq))
        if temp is None:
            temp = _temp_bytes(step, params, state, ids, labels)
        params, state, loss = step(params, state, ids, labels)
        losses.append(float(loss))
    return Run(losses, temp or 0, time.perf_counter() - start)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def run(cfg: Config, mesh: Mesh, out: TextIO = sys.stdout, text: str | None = None,
        process: int = 0) -> dict[str, Any]:
    """Both runs and the comparison; process 0 prints. Returns the figures."""
    data = Data.from_text(load_corpus() if text is None else text)
    problem = check_layout(cfg, mesh)
    if problem:
        raise SystemExit(f"gradrules demo: {problem}")
    vocab = padded_vocab(data.vocab, mesh.model)
    say = out.write if process == 0 else (lambda _: None)
    say(f"gradrules demo on a {mesh.data}x{mesh.model} mesh (data x model) of {mesh.devices} "
        f"devices" + (f" in {mesh.processes} processes" if mesh.processes > 1 else "")
        + f": {cfg.layers}-layer transformer, d_model {cfg.d_model}, {cfg.heads} heads "
        f"({cfg.kv_heads} kv heads), vocabulary {data.vocab} padded to {vocab}, "
        f"{cfg.steps} steps\n")
    sharded = train_on_mesh(cfg, data, mesh, vocab)
    say(f"mesh:       loss {sharded.losses[0]:.4f} -> {sharded.losses[-1]:.4f} in "
        f"{sharded.seconds:.1f} s\n")
    single = train_on_one_device(cfg, data, vocab)
    say(f"one device: loss {single.losses[0]:.4f} -> {single.losses[-1]:.4f} in "
        f"{single.seconds:.1f} s\n")
    diff = float(np.max(np.abs(np.array(sharded.losses) - np.array(single.losses))))
    say(f"max |loss difference| vs one device: {diff:.3g}\n"
        f"temp memory of a training step per device: {_mib(sharded.temp_bytes)} on the mesh, "
        f"{_mib(single.temp_bytes)} on one device\n")
    return {"diff": diff, "mesh_losses": sharded.losses, "one_device_losses": single.losses,
            "temp_bytes": [sharded.temp_bytes, single.temp_bytes]}


# ------------------------------------------------------------ processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(argv: list[str], mesh: Mesh, out: TextIO = sys.stdout,
           command: list[str] | None = None, timeout_s: float = PROCESS_TIMEOUT_S) -> int:
    """Start ``mesh.processes`` processes of ``gradrules demo`` with ``argv``
    (``command``, each followed by ``--process-id I``), let process 0 print,
    and stop all of them when one fails or ``timeout_s`` passes; 0 when all
    succeed."""
    port = _free_port()
    local = mesh.devices // mesh.processes
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={local}",
               GRADRULES_COORDINATOR=f"127.0.0.1:{port}")
    command = command or [sys.executable, "-m", "gradrules.cli", "demo", *argv]
    # process 0 prints to this terminal; the others' stderr is kept in files
    # (a pipe nobody reads could fill and block them), shown if they fail
    logs = [tempfile.TemporaryFile("w+") for _ in range(mesh.processes)]
    procs = [subprocess.Popen([*command, "--process-id", str(i)], env=env, text=True,
                              stdout=subprocess.DEVNULL if i else None,
                              stderr=logs[i] if i else None)
             for i in range(mesh.processes)]
    deadline = time.monotonic() + timeout_s
    failed: str | None = None
    while any(p.poll() is None for p in procs):
        bad = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
        if bad:
            failed = f"process {bad[0]} exited with status {procs[bad[0]].returncode}"
            break
        if time.monotonic() > deadline:
            failed = f"the processes did not finish within {timeout_s:g} s"
            break
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            p.kill()
    for i, (p, log) in enumerate(zip(procs, logs)):
        p.wait(timeout=30)
        if failed is None and p.returncode != 0:
            failed = f"process {i} exited with status {p.returncode}"
        log.seek(0)
        err = log.read()
        if failed and err:
            out.write(f"--- process {i} stderr (last lines) ---\n{err[-2000:]}\n")
        log.close()
    if failed:
        out.write(f"gradrules demo: {failed}; stopped the others\n")
        return 1
    return 0


def join(process: int, mesh: Mesh) -> None:
    """This process's part in ``jax.distributed`` (the coordinator's address
    comes from the launcher)."""
    jax.distributed.initialize(coordinator_address=os.environ["GRADRULES_COORDINATOR"],
                               num_processes=mesh.processes, process_id=process,
                               initialization_timeout=JOIN_TIMEOUT_S)

