"""Drop-in replacements for the positional-encoding modules researchers already use, one module per package:

* :mod:`posenc.torch.compat.rotary_embedding_torch`: lucidrains' ``rotary-embedding-torch`` ``RotaryEmbedding``.
* :mod:`posenc.torch.compat.zeta`: zeta's ``RotaryEmbedding`` and ``apply_rotary_pos_emb``.
* :mod:`posenc.torch.compat.torchscale`: torchscale's ``XPOS``.
* :mod:`posenc.torch.compat.seeds`: the modules of the documents posenc was created from
  (``SinusoidalPositionalEncoding``, ``LearnedPositionalEmbedding``, ``RotaryPositionalEmbedding``,
  ``ALiBiPositionalBias``).

Same class names, constructor arguments and methods as the originals; the work runs through posenc's kernels
(:mod:`posenc.torch`, differentiable), with angles formed in double: the originals form them in float32, which
is off by up to ~p * 2^-24 rad at position p (a few thousandths of a radian at 50k). Where an original has a
defect the drop-in follows the formula and says so in its docstring.
"""
