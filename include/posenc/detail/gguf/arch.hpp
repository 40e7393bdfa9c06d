// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// llama.cpp's table of how each architecture pairs the rotated features (NORM: interleaved, NEOX: half-split,
// MROPE, none). A GGUF file does not say it; the RoPE mapping (rope_keys.hpp) looks the architecture up here.
#pragma once

#include <string>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gguf {

/// How an architecture pairs the rotated features in llama.cpp: llama_model_rope_type() in src/llama-model.cpp
/// (ggml-org/llama.cpp at commit 00342301d01a, 2025), names from LLM_ARCH_NAMES in src/llama-arch.cpp.
/// LLAMA_ROPE_TYPE_NORM ("normal", consecutive pairs (x[2i], x[2i+1])) is used where llama.cpp's converter
/// permutes the q/k weights of a half-split checkpoint (LlamaModel.permute in convert_hf_to_gguf.py) or where
/// the original model pairs that way; LLAMA_ROPE_TYPE_NEOX pairs (x[i], x[i+R/2]); LLAMA_ROPE_TYPE_MROPE
/// (Qwen2-VL) is NEOX pairs with sections.
enum class arch_rope { none, norm, neox, mrope, unknown };

inline arch_rope arch_rope_type(const std::string& arch) {
  static constexpr const char* norm[] = {
      "llama",    "llada",     "llama4",  "deci",      "baichuan",   "starcoder",     "internlm2", "minicpm",
      "xverse",   "command-r", "cohere2", "olmo",      "arctic",     "deepseek",      "deepseek2", "plm",
      "chatglm",  "glm4",      "granite", "granitemoe", "granitehybrid", "chameleon", "bailingmoe", "neo-bert",
      "smollm3",  "arcee",     "ernie4_5", "ernie4_5-moe", "mistral3"};
  static constexpr const char* neox[] = {
      "falcon",   "falcon-h1", "grok",     "dbrx",       "bert",      "jina-bert-v3", "nomic-bert", "nomic-bert-moe",
      "stablelm", "bitnet",    "qwen",     "qwen2",      "dream",     "qwen2moe",     "qwen3",      "qwen3moe",
      "qwen3next", "llada-moe", "olmo2",   "olmoe",      "phi2",      "phi3",         "phimoe",     "plamo",
      "plamo2",   "gemma",     "gemma2",   "gemma3",     "gemma3n",   "gemma-embedding", "starcoder2", "openelm",
      "gptneox",  "codeshell", "orion",    "nemotron",   "exaone",    "exaone4",      "minicpm3",   "bailingmoe2",
      "dots1",    "hunyuan-moe", "gpt-oss", "hunyuan-dense", "lfm2",  "lfm2moe",      "smallthinker", "glm4moe",
      "seed_oss", "grovemoe",  "apertus", "modern-bert"};
  // LLAMA_ROPE_TYPE_NONE in the same function (gptj, listed there too, is left out: GPT-J does use RoPE, its
  // graph is just not implemented in llama.cpp).
  static constexpr const char* none[] = {"clip",  "gpt2",  "mpt",    "refact",    "bloom",      "mamba",
                                         "mamba2", "jamba", "jina-bert-v2", "t5", "t5encoder",  "jais",
                                         "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "wavtokenizer-dec", "nemotron_h"};
  for (const char* a : norm)
    if (arch == a) return arch_rope::norm;
  for (const char* a : neox)
    if (arch == a) return arch_rope::neox;
  if (arch == "qwen2vl") return arch_rope::mrope;
  for (const char* a : none)
    if (arch == a) return arch_rope::none;
  return arch_rope::unknown;
}

}  // namespace detail::gguf
POSENC_END_NAMESPACE
