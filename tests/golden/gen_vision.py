#!/usr/bin/env python3
"""Generate vision.txt: the 2D RoPE and block attention of vision towers, from their configs.

Run:  python3 tests/golden/gen_vision.py      (writes vision.txt next to this script)

Inputs are the hand-written configs in tests/data/hf/models/ (public values of each model's config.json).
Each family's rules are re-stated here from its reference implementation, importing nothing from posenc:
  Qwen2-VL    transformers modeling_qwen2_vl.py: head_dim = embed_dim // num_heads; VisionRotaryEmbedding(
              head_dim // 2): inv_freq = 1 / 10000^(arange(0, dim, 2) / dim), dim = head_dim / 2;
              rot_pos_emb: cat(inv_freq * h, inv_freq * w), hpos/wpos ordered in spatial_merge_size blocks
              (expand, reshape(H/m, m, W/m, m), permute(0, 2, 1, 3), flatten), repeated per frame; the rotation
              apply_rotary_pos_emb_vision: emb = cat(freqs, freqs), x cos + rotate_half(x) sin.
  Qwen2.5-VL  modeling_qwen2_5_vl.py: the same RoPE with head_dim = hidden_size // num_heads; blocks not in
              fullatt_block_indexes attend within windows of window_size // spatial_merge_size // patch_size
              merged units (get_window_index).
  Pixtral     modeling_pixtral.py PixtralRotaryEmbedding: freqs = 1 / rope_theta^(arange(0, D, 2) / D);
              rows take freqs[::2], columns freqs[1::2]; inv_freq = cat(rows * h, columns * w), emb =
              cat(inv_freq, inv_freq), rotate_half; position ids row-major (position_ids_in_meshgrid);
              PixtralVisionConfig defaults: num_hidden_layers 24, rope_theta 10000 (transformers v5:
              rope_parameters.rope_theta), hidden_size 1024, num_attention_heads 16.
Arithmetic in mpmath at 40 digits; positions with numpy's reshape/transpose, as the reference forms them.

Case params: config, layers, head_dim, base, layout (0 split, 1 alternating), merge, max_side.
Arrays: windowed i64 (L), window i64 (L); inv_freq f64 (D/2) and axis i64 (D/2) (1 row, 2 column) per pair;
  grid i64 (3): frames, grid_h, grid_w of a sample image and positions i64 (3, frames*grid_h*grid_w) in the
  tower's order (t row all 0); x f64 (D) one head (sin(k+1) rounded to bfloat16) and rot_pos i64 (K, 2) (row, column) and rotated f64 (K, D):
  HF's rotation of x at each position.
"""

import json
import os

import numpy as np
from mpmath import mp, mpf

from golden_io import Case, bf16_round, dbl, write_file

mp.dps = 40
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.environ.get('POSENC_HF_MODELS', os.path.join(HERE, '..', 'data', 'hf', 'models'))
ROT_POS = [(0, 0), (0, 1), (1, 0), (3, 5), (37, 12), (63, 63)]


def load(name):
    with open(os.path.join(MODELS, name)) as f:
        return json.load(f)


def qwen_freqs(head_dim):
    dim = head_dim // 2
    inv = [1 / mpf(10000) ** (mpf(k) / dim) for k in range(0, dim, 2)]
    return inv, inv


def pixtral_freqs(head_dim, base):
    freqs = [1 / mpf(base) ** (mpf(k) / head_dim) for k in range(0, head_dim, 2)]
    return freqs[0::2], freqs[1::2]


def qwen_positions(frames, h, w, m):
    hpos = np.broadcast_to(np.arange(h)[:, None], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3).ravel()
    wpos = np.broadcast_to(np.arange(w)[None, :], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3).ravel()
    return np.tile(hpos, frames), np.tile(wpos, frames)


def pixtral_positions(h, w):
    hg, wg = np.meshgrid(np.arange(h), np.arange(w), indexing='ij')
    return hg.ravel(), wg.ravel()


def rotate(x, rows, cols, h, w):
    """HF: freqs = cat(rows * h, cols * w); emb = cat(freqs, freqs); x cos(emb) + rotate_half(x) sin(emb)."""
    freqs = [f * h for f in rows] + [f * w for f in cols]
    emb = freqs + freqs
    half = len(x) // 2
    rot = [-x[i + half] for i in range(half)] + [x[i] for i in range(half)]
    return [x[i] * mp.cos(emb[i]) + rot[i] * mp.sin(emb[i]) for i in range(len(x))]


def case(name, config):
    root = load(config)
    v = root.get('vision_config', root)
    family = root.get('model_type')
    if family in ('qwen2_vl', 'qwen2_5_vl'):
        width = v['hidden_size'] if family == 'qwen2_5_vl' else v['embed_dim']
        D = width // v['num_heads']
        L, m, base, layout, max_side = v['depth'], v['spatial_merge_size'], 10000, 0, 0
        rows, cols = qwen_freqs(D)
        frames, gh, gw = 2, 4, 6
        hpos, wpos = qwen_positions(frames, gh, gw, m)
    else:  # pixtral
        hidden, heads = v.get('hidden_size', 1024), v.get('num_attention_heads', 16)
        D = v.get('head_dim') or hidden // heads
        base = (v.get('rope_parameters') or {}).get('rope_theta', v.get('rope_theta', 10000.0))  # v5, else v4
        L, m, layout = v.get('num_hidden_layers', 24), 1, 1
        max_side = v.get('image_size', 1024) // v.get('patch_size', 16)
        rows, cols = pixtral_freqs(D, base)
        frames, gh, gw = 1, 4, 6
        hpos, wpos = pixtral_positions(gh, gw)
    windowed, window = [0] * L, [0] * L
    if family == 'qwen2_5_vl':
        units = v['window_size'] // v['spatial_merge_size'] // v['patch_size']
        full = v.get('fullatt_block_indexes', [7, 15, 23, 31])
        windowed = [0 if i in full else 1 for i in range(L)]
        window = [0 if i in full else units * v['spatial_merge_size'] for i in range(L)]

    c = Case(name)
    c.param('config', config)
    c.param('layers', L)
    c.param('head_dim', D)
    c.param('base', base)
    c.param('layout', layout)
    c.param('merge', m)
    c.param('max_side', max_side)
    c.array('windowed', 'i64', [L], windowed)
    c.array('window', 'i64', [L], window)
    c.array('inv_freq', 'f64', [D // 2], rows + cols)
    c.array('axis', 'i64', [D // 2], [1] * len(rows) + [2] * len(cols))
    n = frames * gh * gw
    c.array('grid', 'i64', [3], [frames, gh, gw])
    c.array('positions', 'i64', [3, n], [0] * n + [int(p) for p in hpos] + [int(p) for p in wpos])
    x = [mpf(bf16_round(dbl(mp.sin(k + 1)))) for k in range(D)]  # exact in every dtype under test
    c.array('x', 'f64', [D], x)
    c.array('rot_pos', 'i64', [len(ROT_POS), 2], [p for hw in ROT_POS for p in hw])
    c.array('rotated', 'f64', [len(ROT_POS), D], [y for h, w in ROT_POS for y in rotate(x, rows, cols, h, w)])
    return c


def main():
    cases = [
        case('qwen2_vl_7b', 'qwen2_vl_7b.json'),
        case('qwen2_5_vl_7b', 'qwen2_5_vl_7b.json'),
        case('pixtral_12b', 'pixtral_12b.json'),
        case('mistral_small_3_1', 'mistral_small_3_1.json'),
        case('ministral3_14b', 'ministral3_14b.json'),
    ]
    write_file('vision.txt', 'gen_vision.py', [
        'Vision towers: 2D RoPE and block attention from tests/data/hf/models/*.json (see gen_vision.py).',
    ], cases)


if __name__ == '__main__':
    main()
