"""posenc inside a real model: a tiny, randomly initialised Hugging Face Llama whose rotary embedding is swapped
for posenc's, checked against the original and against a float64 reference.

Hugging Face's Llama (transformers 4.46) forms the RoPE angles in float32 (position_ids.float() @ inv_freq),
so far into a sequence they drift: at position 100,000 a float32 angle is off by up to ~0.004 rad. posenc forms
them in double and rounds only the rotated values. The example builds the model from a config dict (no
weights are downloaded), then:

  1. at positions 0..15, posenc's logits equal the original's within float32 tolerance;
  2. at positions 100,000..100,015, both are compared with a float64 run in which the rotation is the formula
     in float64 (inv_freq, angles, cos and sin all in double): posenc's logits stay closer to it.

The swap: LlamaRotaryEmbedding.forward hands the position ids through (in place of cos and sin) and
apply_rotary_pos_emb rotates q and k with posenc.apply_rope on the same tensors' memory (layout NHLD: HF's q is
(batch, heads, tokens, head_dim)).

Needs PyTorch (Debian's python3-torch 1.13) and transformers 4.46.3 (PyPI); without them it prints
"hf_llama.py: skipped: ..." and exits 0. Run: python python/examples/hf_llama.py
"""
import sys

import numpy as np

try:
    import torch
    import transformers
    from transformers.models.llama import modeling_llama
except ImportError as e:  # the documented skip: no PyTorch or transformers here
    print(f"hf_llama.py: skipped: {e}")
    sys.exit(0)

import posenc

CONFIG = dict(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=131072, rope_theta=10000.0, rms_norm_eps=1e-6)
FAR = 100_000

original_rotary_forward = modeling_llama.LlamaRotaryEmbedding.forward
original_apply = modeling_llama.apply_rotary_pos_emb


def posenc_swap(plan):
    """Patches the Llama module so that RoPE is posenc's: the rotary module passes the position ids on."""

    def rotary_forward(self, x, position_ids):
        return position_ids, position_ids

    def apply(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        pos = cos.numpy()  # the position ids, (batch, tokens)
        return (posenc.apply_rope(q, plan, positions=pos, layout="NHLD"),
                posenc.apply_rope(k, plan, positions=pos, layout="NHLD"))

    modeling_llama.LlamaRotaryEmbedding.forward = rotary_forward
    modeling_llama.apply_rotary_pos_emb = apply


def float64_swap(head_dim, base):
    """Patches the Llama module so that RoPE is the formula in float64 (the reference run)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

    def rotary_forward(self, x, position_ids):
        angles = position_ids.to(torch.float64)[..., None] * inv_freq  # (batch, tokens, head_dim / 2)
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()

    modeling_llama.LlamaRotaryEmbedding.forward = rotary_forward
    modeling_llama.apply_rotary_pos_emb = original_apply


def restore():
    modeling_llama.LlamaRotaryEmbedding.forward = original_rotary_forward
    modeling_llama.apply_rotary_pos_emb = original_apply


def logits(model, ids, start):
    pos = torch.arange(start, start + ids.shape[1], dtype=torch.int64)[None, :].expand(ids.shape[0], -1)
    with torch.no_grad():
        return model(input_ids=ids, position_ids=pos).logits.to(torch.float64)


def main():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**CONFIG)
    model = transformers.LlamaForCausalLM(config).eval()
    model64 = transformers.LlamaForCausalLM(config).eval()
    model64.load_state_dict(model.state_dict())
    model64 = model64.double()
    ids = torch.randint(0, CONFIG["vocab_size"], (2, 16))
    head_dim = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    plan = posenc.RopePlan.from_hf_config(config.to_dict())
    print(f"hf_llama.py: transformers {transformers.__version__}, torch {torch.__version__}, posenc kernels "
          f"{posenc.isa()}; plan: head_dim {plan.head_dim}, {plan.style}, base {CONFIG['rope_theta']:g}")

    results = {}
    for start in (0, FAR):
        restore()
        hf = logits(model, ids, start)
        posenc_swap(plan)
        ours = logits(model, ids, start)
        float64_swap(head_dim, CONFIG["rope_theta"])
        ref = logits(model64, ids, start)
        restore()
        results[start] = (float((hf - ref).abs().max()), float((ours - ref).abs().max()), float((ours - hf).abs().max()))
        print(f"positions {start}..{start + ids.shape[1] - 1}: max |logit - float64| HF float32 {results[start][0]:.2e}, "
              f"posenc float32 {results[start][1]:.2e}; max |posenc - HF| {results[start][2]:.2e}")

    near_hf, near_ours, near_diff = results[0]
    far_hf, far_ours, _ = results[FAR]
    ok = near_diff < 1e-4 and near_ours < 1e-4 and far_ours < 1e-4 and far_ours < far_hf
    print("posenc == HF at short positions, closer to float64 past 100k" if ok else "hf_llama.py: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
