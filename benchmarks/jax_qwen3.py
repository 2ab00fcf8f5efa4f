"""A Qwen3 decode layer in JAX under `shard_map` over N CPU devices, Megatron-style (q/k/v and
gate/up split by output rows, o/down by input columns, one ``psum`` after each): the JAX
column of `benchmarks.backends` (not itself a benchmark). JAX is benchmark-only: importing
this module needs it, `available` says whether it is there.

The N devices are XLA's host platform split in N (``--xla_force_host_platform_device_count``,
set by `benchmarks.backends` before JAX is imported); they share the machine's cores.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def available() -> bool:
    """Whether JAX is installed."""
    return importlib.util.find_spec("jax") is not None


def layer_step(
    w: Mapping[str, np.ndarray],
    chips: int,
    *,
    heads: int,
    kv_heads: int,
    head_dim: int,
    eps: float = 1e-6,
    theta: float = 1e6,
) -> Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[Any, Any, Any]]:
    """Layer 0 of ``w`` placed over ``chips`` devices (each its slices, once), and its decode
    step ``(x, past_k, past_v, position) -> (x, keys, values)``, compiled by XLA; the caches
    it returns are the next step's (donated, updated in place). Weights of another float
    type than f32 are widened inside the step, as one writes it in JAX."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((chips,), ("c",), devices=jax.devices()[:chips])
    p = "model.layers.0."
    names = {
        "ln1": ("input_layernorm.weight", P()),
        "ln2": ("post_attention_layernorm.weight", P()),
        "qn": ("self_attn.q_norm.weight", P()),
        "kn": ("self_attn.k_norm.weight", P()),
        "wq": ("self_attn.q_proj.weight", P("c", None)),
        "wk": ("self_attn.k_proj.weight", P("c", None)),
        "wv": ("self_attn.v_proj.weight", P("c", None)),
        "wo": ("self_attn.o_proj.weight", P(None, "c")),
        "wg": ("mlp.gate_proj.weight", P("c", None)),
        "wu": ("mlp.up_proj.weight", P("c", None)),
        "wd": ("mlp.down_proj.weight", P(None, "c")),
    }
    specs = {k: spec for k, (_, spec) in names.items()}
    params = {
        k: jax.device_put(w[p + name], NamedSharding(mesh, spec))
        for k, (name, spec) in names.items()
    }
    cache_spec = P(None, "c", None, None)
    half = head_dim // 2
    inv = (1.0 / theta ** (np.arange(half, dtype=np.float32) * 2 / head_dim)).astype(np.float32)

    def f32(a: Any) -> Any:
        return a.astype(jnp.float32)

    def lin(x: Any, w: Any) -> Any:
        # x [b, in] by w [out, in], contracting the input axes: ``x @ w.T`` would make XLA
        # copy w transposed at every step (measured 11x slower on a 12288x4096 matvec)
        return jax.lax.dot_general(f32(x), f32(w), (((1,), (1,)), ((), ())))

    def rms(x: Any, g: Any) -> Any:
        return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * f32(g)

    def local(prm: dict[str, Any], x: Any, pk: Any, pv: Any, pos: Any) -> tuple[Any, Any, Any]:
        b = x.shape[0]
        xn = rms(x, prm["ln1"])
        q = lin(xn, prm["wq"]).reshape(b, -1, head_dim)
        k = lin(xn, prm["wk"]).reshape(b, -1, head_dim)
        v = lin(xn, prm["wv"]).reshape(b, -1, head_dim)
        q, k = rms(q, prm["qn"]), rms(k, prm["kn"])
        freqs = pos.astype(jnp.float32) * inv
        cos, sin = jnp.cos(freqs), jnp.sin(freqs)

        def rope(t: Any) -> Any:
            t1, t2 = t[..., :half], t[..., half:]
            return jnp.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)

        q, k = rope(q), rope(k)
        keys = jax.lax.dynamic_update_slice(pk, k[:, :, None, :], (0, 0, pos, 0))
        vals = jax.lax.dynamic_update_slice(pv, v[:, :, None, :], (0, 0, pos, 0))
        kv = keys.shape[1]
        qg = q.reshape(b, kv, -1, head_dim)
        s = jnp.einsum("bkgd,bkmd->bkgm", qg, keys) / math.sqrt(head_dim)
        s = jnp.where(jnp.arange(keys.shape[2]) <= pos, s, -jnp.inf)
        attn = jnp.einsum("bkgm,bkmd->bkgd", jax.nn.softmax(s, axis=-1), vals).reshape(b, -1)
        x = x + jax.lax.psum(lin(attn, prm["wo"]), "c")
        xn = rms(x, prm["ln2"])
        g, u = lin(xn, prm["wg"]), lin(xn, prm["wu"])
        x = x + jax.lax.psum(lin(jax.nn.silu(g) * u, prm["wd"]), "c")
        return x, keys, vals

    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(specs, P(), cache_spec, cache_spec, P()),
        out_specs=(P(), cache_spec, cache_spec),
        check_vma=False,
    )
    step = jax.jit(sharded, donate_argnums=(2, 3))
    cache_sharding = NamedSharding(mesh, cache_spec)

    def run(x: np.ndarray, pk: Any, pv: Any, position: int) -> tuple[Any, Any, Any]:
        if isinstance(pk, np.ndarray):
            pk = jax.device_put(pk, cache_sharding)
            pv = jax.device_put(pv, cache_sharding)
        out = step(params, x, pk, pv, jnp.int32(position))
        out[0].block_until_ready()
        return out

    return run
