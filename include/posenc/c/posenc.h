/* posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
 *
 * The C API: posenc's kernels from C, Rust, Go, Zig, Python ctypes, through one shared library (libposenc)
 * with a stable ABI. C99; no C++ on the consumer side. docs/c-api.md has the examples, the ownership rules and
 * the thread-safety of handles.
 *
 * Conventions:
 *  - Every function that can fail returns posenc_status (0 = POSENC_OK). On failure nothing is written to any
 *    output and the message is kept per thread: posenc_last_error copies it into a caller buffer. No C++
 *    exception crosses this boundary.
 *  - Tensors are described by posenc_tensor: a data pointer, a dtype (float32, float64, and the bit patterns of
 *    IEEE binary16 and bfloat16 as uint16_t), a rank and per-dimension extents and strides in elements. The
 *    kernels take RoPE tensors as rank 4 (N, L, H, D) and attention scores as rank 4 (N, H, Lq, Lk); other
 *    ranks are rejected with a message, never reshaped.
 *  - Handles (plans, caches, model configurations) are created by *_create / *_read functions and released by
 *    the matching *_destroy (null is accepted there). A handle is immutable after creation: one handle may be
 *    used by several threads at once.
 *  - Structs that carry options begin with struct_size; fill them with the *_init functions, which set it,
 *    so that a later version can append fields without breaking programs built against this one.
 *  - Symbols: every exported name starts with posenc_; nothing else is exported.
 */
#ifndef POSENC_C_POSENC_H_
#define POSENC_C_POSENC_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(POSENC_C_BUILDING)
#define POSENC_C_API __declspec(dllexport)
#elif defined(_WIN32) && defined(POSENC_C_SHARED)
#define POSENC_C_API __declspec(dllimport)
#elif defined(__GNUC__) || defined(__clang__)
#define POSENC_C_API __attribute__((visibility("default")))
#else
#define POSENC_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, version, CPU ---------------------------------------------------------------------------------- */

/** What a call returned; the message of a failure is in posenc_last_error. */
typedef enum posenc_status {
  POSENC_OK = 0,
  POSENC_INVALID_ARGUMENT = 1, /**< a bad shape, stride, position, configuration value, dtype or aliasing */
  POSENC_INVALID_FILE = 2,     /**< a file that is not what it claims (bad magic, truncated, wrong types) */
  POSENC_IO_ERROR = 3,         /**< a file that cannot be opened or read */
  POSENC_OUT_OF_MEMORY = 4,    /**< an allocation failed */
  POSENC_INTERNAL_ERROR = 5    /**< a failure posenc did not classify (a bug: please report it) */
} posenc_status;

/** The library's version, "MAJOR.MINOR.PATCH" (posenc/version.hpp). */
POSENC_C_API const char* posenc_version(void);
/** The C API's version: 1. It grows when functions or struct fields are added. */
POSENC_C_API int posenc_c_api_version(void);
/** The kernels this CPU runs: "scalar", "avx2", "avx512" or "neon" (run-time dispatch; POSENC_ISA lowers it). */
POSENC_C_API const char* posenc_active_isa(void);
/** "ok", "invalid_argument", "invalid_file", "io_error", "out_of_memory", "internal_error"; "unknown" else. */
POSENC_C_API const char* posenc_status_name(posenc_status status);
/** Copies this thread's last failure message (NUL-terminated, truncated to size - 1 bytes) into buf when size
 * > 0, and returns its full length; "" and 0 when the thread's last call succeeded. */
POSENC_C_API size_t posenc_last_error(char* buf, size_t size);

/* ---- tensors and positions --------------------------------------------------------------------------------- */

/** Element types. F16 and BF16 are bit patterns (uint16_t): IEEE binary16 and bfloat16. I8 and U8 are the
 * 8-bit codes of the quantised calls only (int8 codes; fp8 E4M3 / E5M2 codes). */
typedef enum posenc_dtype {
  POSENC_F32 = 1,
  POSENC_F64 = 2,
  POSENC_F16 = 3,
  POSENC_BF16 = 4,
  POSENC_I8 = 5,
  POSENC_U8 = 6
} posenc_dtype;

#define POSENC_MAX_RANK 4

/** A strided tensor: element (i0, .., i{rank-1}) at data + sum(ik * strides[k]) elements of dtype. Extents
 * and strides must be >= 0. Fill it with posenc_tensor_contiguous or by hand after posenc_tensor_init. */
typedef struct posenc_tensor {
  uint32_t struct_size; /**< sizeof(posenc_tensor) */
  int32_t dtype;        /**< a posenc_dtype */
  int32_t rank;         /**< 1 .. POSENC_MAX_RANK; each call states the rank it takes */
  int32_t reserved;     /**< 0 */
  void* data;                       /**< element (0, .., 0) */
  int64_t shape[POSENC_MAX_RANK];   /**< extents of the first `rank` dimensions, >= 0 */
  int64_t strides[POSENC_MAX_RANK]; /**< strides in elements of the first `rank` dimensions, >= 0 */
} posenc_tensor;

/** A row-major contiguous tensor of `rank` extents `shape`. */
POSENC_C_API posenc_tensor posenc_tensor_contiguous(void* data, posenc_dtype dtype, int32_t rank, const int64_t* shape);

/** How positions are given (posenc/positions.hpp). */
typedef enum posenc_positions_kind {
  POSENC_POS_OFFSET = 0,       /**< token (n, l) at offset + l */
  POSENC_POS_PER_SEQUENCE = 1, /**< token (n, l) at values[n] + l (values: batch entries) */
  POSENC_POS_PER_TOKEN = 2     /**< token (n, l) at values[n * row_stride + l] */
} posenc_positions_kind;

/** Index types of position, slot and length arrays. */
typedef enum posenc_index_type { POSENC_I64 = 0, POSENC_I32 = 1 } posenc_index_type;

/** Positions of the N x L tokens of a call. Use the posenc_positions_* constructors. */
typedef struct posenc_positions {
  uint32_t struct_size; /**< sizeof(posenc_positions) */
  int32_t kind;         /**< a posenc_positions_kind */
  int32_t index_type;   /**< a posenc_index_type, for values */
  int32_t reserved;     /**< 0 */
  int64_t offset;       /**< POSENC_POS_OFFSET */
  const void* values;   /**< per sequence or per token */
  int64_t batch;        /**< entries of values (per sequence), or N (per token) */
  int64_t length;       /**< per token: L */
  int64_t row_stride;   /**< per token: elements between sequences' rows; -1 means length */
} posenc_positions;

POSENC_C_API posenc_positions posenc_positions_offset(int64_t offset);
POSENC_C_API posenc_positions posenc_positions_per_sequence(const void* starts, posenc_index_type type, int64_t batch);
POSENC_C_API posenc_positions posenc_positions_per_token(const void* ids, posenc_index_type type, int64_t batch,
                                                         int64_t length, int64_t row_stride);

/* ---- RoPE plans, caches and model configurations ------------------------------------------------------------ */

typedef enum posenc_rope_style {
  POSENC_ROPE_INTERLEAVED = 0, /**< pairs (x[2i], x[2i+1]): GPT-J, RoFormer, ggml mode 0 */
  POSENC_ROPE_HALF_SPLIT = 1   /**< pairs (x[i], x[i + R/2]): GPT-NeoX, Llama, Qwen2 (HF rotate_half) */
} posenc_rope_style;

typedef enum posenc_rope_scaling {
  POSENC_SCALING_NONE = 0,
  POSENC_SCALING_LINEAR = 1,        /**< w_i / factor (position interpolation) */
  POSENC_SCALING_NTK = 2,           /**< base * factor^(R/(R-2)) */
  POSENC_SCALING_DYNAMIC_NTK = 3,   /**< HF "dynamic" */
  POSENC_SCALING_YARN = 4,          /**< HF "yarn" */
  POSENC_SCALING_DEEPSEEK_YARN = 5, /**< DeepSeek-V2/V3 YaRN (mscale, mscale_all_dim) */
  POSENC_SCALING_LLAMA3 = 6,        /**< Llama 3.1 wavelength bands */
  POSENC_SCALING_LONGROPE = 7       /**< LongRoPE / Phi-3 short and long factors */
} posenc_rope_scaling;

/** When dynamic NTK re-evaluates its base / when LongRoPE uses its long factors (posenc/rope_plan.hpp). */
typedef enum posenc_length_policy {
  POSENC_POLICY_PER_LENGTH = 0,   /**< Hugging Face: from the sequence length (seq_len) */
  POSENC_POLICY_FIXED_AT_MAX = 1, /**< dynamic NTK, vLLM: once, at M * factor */
  POSENC_POLICY_PAST_ORIGINAL = 2, /**< LongRoPE, vLLM: long when some position > M */
  POSENC_POLICY_ALWAYS_SHORT = 3, /**< LongRoPE */
  POSENC_POLICY_ALWAYS_LONG = 4   /**< LongRoPE */
} posenc_length_policy;

/** A RoPE configuration (posenc::rope_config; field names as Hugging Face's rope_scaling keys). Fill it with
 * posenc_rope_config_init, which sets the defaults below. */
typedef struct posenc_rope_config {
  uint32_t struct_size;          /**< sizeof(posenc_rope_config) */
  int32_t style;                 /**< posenc_rope_style; default half-split */
  int64_t head_dim;              /**< D > 0 */
  int64_t rotary_dim;            /**< R, even; 0 = head_dim */
  int64_t rotary_offset;         /**< start of the rotated window in the head; default 0 */
  double base;                   /**< rope_theta; default 10000 */
  int32_t scaling;               /**< posenc_rope_scaling; default none */
  int32_t policy;                /**< posenc_length_policy (dynamic NTK, LongRoPE); default per length */
  double factor;                 /**< default 1 */
  int64_t original_max_positions; /**< M (dynamic NTK, YaRN, Llama 3, LongRoPE) */
  double beta_fast;              /**< YaRN; default 32 */
  double beta_slow;              /**< YaRN; default 1 */
  int32_t truncate;              /**< YaRN: floor/ceil the correction range; default 1 */
  int32_t reserved;              /**< 0 */
  double mscale;                 /**< YaRN / DeepSeek YaRN; 0 = absent */
  double mscale_all_dim;         /**< YaRN / DeepSeek YaRN; 0 = absent */
  double attention_factor;       /**< YaRN, LongRoPE magnitude override; 0 = derived */
  double low_freq_factor;        /**< Llama 3; default 1 */
  double high_freq_factor;       /**< Llama 3; default 4 */
  const double* short_factor;    /**< LongRoPE: R/2 short factors */
  const double* long_factor;     /**< LongRoPE: R/2 long factors */
  int64_t longrope_factor_count; /**< entries of short_factor and long_factor */
  const double* freq_factors;    /**< per-pair divisors (ggml rope_freqs); null = none */
  int64_t freq_factor_count;     /**< entries of freq_factors (R/2), 0 = none */
} posenc_rope_config;

/** Sets struct_size and the defaults. */
POSENC_C_API void posenc_rope_config_init(posenc_rope_config* config);

/** A resolved RoPE plan (frequencies, magnitude, window); immutable. */
typedef struct posenc_rope_plan posenc_rope_plan;
/** A plan's cos/sin rows for positions [0, max_positions); immutable. */
typedef struct posenc_rope_cache posenc_rope_cache;
/** A model's positional configuration as read from a Hugging Face config.json or a GGUF file. */
typedef struct posenc_model_config posenc_model_config;

/** make_rope_plan: `seq_len` is the length the plan serves (needed by length-dependent scalings: dynamic NTK
 * and LongRoPE per length; 0 otherwise). */
POSENC_C_API posenc_status posenc_rope_plan_create(const posenc_rope_config* config, int64_t seq_len,
                                                   posenc_rope_plan** out);
POSENC_C_API void posenc_rope_plan_destroy(posenc_rope_plan* plan);
/** D, R, the rotated window's offset, the style (posenc_rope_style), the pairs R/2. */
POSENC_C_API int64_t posenc_rope_plan_head_dim(const posenc_rope_plan* plan);
POSENC_C_API int64_t posenc_rope_plan_rotary_dim(const posenc_rope_plan* plan);
POSENC_C_API int32_t posenc_rope_plan_style(const posenc_rope_plan* plan);
/** The cos/sin magnitude (YaRN, LongRoPE attention factor) and the logit scale (DeepSeek YaRN). */
POSENC_C_API double posenc_rope_plan_magnitude(const posenc_rope_plan* plan);
POSENC_C_API double posenc_rope_plan_logit_scale(const posenc_rope_plan* plan);
/** Copies the R/2 frequencies w_i (radians per position) into out[0 .. count); count must be R/2. */
POSENC_C_API posenc_status posenc_rope_plan_inv_freq(const posenc_rope_plan* plan, double* out, int64_t count);

/** rope_cache: the plan's cos and sin in dtype (POSENC_F32 or POSENC_F64) for max_positions positions. */
POSENC_C_API posenc_status posenc_rope_cache_create(const posenc_rope_plan* plan, int64_t max_positions,
                                                    posenc_dtype dtype, posenc_rope_cache** out);
POSENC_C_API void posenc_rope_cache_destroy(posenc_rope_cache* cache);
POSENC_C_API int64_t posenc_rope_cache_max_positions(const posenc_rope_cache* cache);

/** Reads a Hugging Face config.json (rope_config_from_hf_file) or a GGUF file's metadata (read_gguf_rope). */
POSENC_C_API posenc_status posenc_model_config_read_hf(const char* path, posenc_model_config** out);
POSENC_C_API posenc_status posenc_model_config_read_gguf(const char* path, posenc_model_config** out);
POSENC_C_API void posenc_model_config_destroy(posenc_model_config* model);
/** Copies the model's RoPE configuration into config (its struct_size must be set); the arrays it points to
 * live as long as the model handle. */
POSENC_C_API posenc_status posenc_model_config_rope(const posenc_model_config* model, posenc_rope_config* config);
/** The model's plan for sequences of seq_len tokens (as posenc_rope_plan_create on its configuration). */
POSENC_C_API posenc_status posenc_model_config_plan(const posenc_model_config* model, int64_t seq_len,
                                                    posenc_rope_plan** out);
/** Heads (0 when the file does not say) and max positions (Hugging Face max_position_embeddings, GGUF
 * context_length; 0 when absent). */
POSENC_C_API int64_t posenc_model_config_num_heads(const posenc_model_config* model);
POSENC_C_API int64_t posenc_model_config_num_kv_heads(const posenc_model_config* model);
POSENC_C_API int64_t posenc_model_config_max_positions(const posenc_model_config* model);

/* ---- a model layer by layer (posenc::model_positional_plan; docs/models.md) ----------------------------------
 * Sliding and chunked layers, their own bases (Gemma 3, ModernBERT), layers without RoPE (Llama 4, SmolLM3,
 * Cohere 2) and the factor some models put on q (Llama 4's NoPE layers, Ministral 3).
 */

/** A model's positional treatment per layer, read from a config.json or a GGUF file; immutable. */
typedef struct posenc_model_layers posenc_model_layers;

/** A layer's attention (Hugging Face layer_types). */
typedef enum posenc_attention_kind {
  POSENC_ATTENTION_FULL = 0,    /**< every earlier token */
  POSENC_ATTENTION_SLIDING = 1, /**< the last `window` tokens (ModernBERT, EmbeddingGemma: window/2 each side) */
  POSENC_ATTENTION_CHUNKED = 2  /**< the tokens of the same chunk of `window` positions (Llama 4) */
} posenc_attention_kind;

/** One layer (posenc::layer_positional). Fill struct_size with posenc_layer_info_init. The factor on q at
 * position p (0-based) is 1 + temperature_attn_scale * ln(floor((p + temperature_offset) /
 * temperature_floor_scale) + 1) when `temperature` is 1 (posenc_model_layers_temperature computes it). */
typedef struct posenc_layer_info {
  uint32_t struct_size;            /**< sizeof(posenc_layer_info) */
  int32_t rope;                    /**< 1: q and k rotate (posenc_model_layers_rope); 0: a NoPE layer */
  int32_t attention;               /**< posenc_attention_kind */
  int32_t temperature;             /**< 1: q is multiplied by the factor above */
  int64_t window;                  /**< tokens of a sliding window or a chunk; 0 for full attention */
  double temperature_floor_scale;  /**< Llama 4 floor_scale; Ministral 3 original_max_position_embeddings */
  double temperature_attn_scale;   /**< Llama 4 attn_scale; Ministral 3 llama_4_scaling_beta */
  double temperature_offset;       /**< 1 (Llama 4) or 0 (Ministral 3) */
} posenc_layer_info;

/** Sets struct_size and zeroes the rest. */
POSENC_C_API void posenc_layer_info_init(posenc_layer_info* info);
/** model_plan_from_hf_file / read_gguf_model_plan: every layer of the model at `path`. */
POSENC_C_API posenc_status posenc_model_layers_read_hf(const char* path, posenc_model_layers** out);
POSENC_C_API posenc_status posenc_model_layers_read_gguf(const char* path, posenc_model_layers** out);
POSENC_C_API void posenc_model_layers_destroy(posenc_model_layers* model);
/** The number of layers (0 for null). */
POSENC_C_API int64_t posenc_model_layers_count(const posenc_model_layers* model);
/** Layer `layer` into info (its struct_size must be set); invalid_argument when layer is not in [0, count). */
POSENC_C_API posenc_status posenc_model_layers_layer(const posenc_model_layers* model, int64_t layer,
                                                     posenc_layer_info* info);
/** The layer's RoPE configuration (as posenc_model_config_rope; arrays live as long as the handle);
 * invalid_argument for a NoPE layer. */
POSENC_C_API posenc_status posenc_model_layers_rope(const posenc_model_layers* model, int64_t layer,
                                                    posenc_rope_config* config);
/** The layer's plan for sequences of seq_len tokens; invalid_argument for a NoPE layer. */
POSENC_C_API posenc_status posenc_model_layers_plan(const posenc_model_layers* model, int64_t layer, int64_t seq_len,
                                                    posenc_rope_plan** out);
/** The factor on q of the layer at position p (1 where the layer has none), into *out. */
POSENC_C_API posenc_status posenc_model_layers_temperature(const posenc_model_layers* model, int64_t layer,
                                                           int64_t position, double* out);

/* ---- applying RoPE --------------------------------------------------------------------------------------------
 * `source`: exactly one of plan (cos/sin formed on the fly) and cache (table rows) is non-null.
 * Tensors: rank 4 (N, L, H, D), D = the plan's head_dim; any dtype, any strides >= 0.
 */

/** apply_rope in place (out null or out == in) or out of place into out (same shape, any dtype; the features
 * outside the rotated window are copied). `inverse` != 0: the transpose (backward; the rotation by -theta). */
POSENC_C_API posenc_status posenc_apply_rope(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                             const posenc_tensor* in, const posenc_tensor* out,
                                             const posenc_positions* pos, int32_t inverse);
/** apply_rope_qk: q and k (same N and L, their own heads; e.g. views into a fused QKV buffer) in place. */
POSENC_C_API posenc_status posenc_apply_rope_qk(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                                const posenc_tensor* q, const posenc_tensor* k,
                                                const posenc_positions* pos);

/** Where new tokens go in a KV cache (posenc::kv_slots). */
typedef struct posenc_kv_slots {
  uint32_t struct_size; /**< sizeof(posenc_kv_slots) */
  int32_t paged;        /**< 1: slot_mapping; 0: contiguous cached lengths */
  int32_t reserved;     /**< 0 */
  const int64_t* values; /**< paged: slot of token (n, l) at values[n * row_stride + l], -1 skips it;
                              contiguous: cached length of each of the N sequences */
  int64_t batch;        /**< N */
  int64_t length;       /**< paged: L */
  int64_t row_stride;   /**< paged: 0 means L */
} posenc_kv_slots;

POSENC_C_API posenc_kv_slots posenc_kv_slots_paged(const int64_t* slot_mapping, int64_t batch, int64_t length);
POSENC_C_API posenc_kv_slots posenc_kv_slots_contiguous(const int64_t* cached_lengths, int64_t batch);

/** rope_qk_append_kv (q non-null: rotated in place) or rope_append_kv (q null): k rotated into k_cache, v copied
 * into v_cache, each converted to the cache's dtype with one rounding. k, v: (N, L, Hk, D); caches: rank 4,
 * [B, max_len, Hk, D] contiguous or [num_blocks, block_size, Hk, D] paged. */
POSENC_C_API posenc_status posenc_rope_append_kv(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                                 const posenc_tensor* q, const posenc_tensor* k,
                                                 const posenc_tensor* v, const posenc_tensor* k_cache,
                                                 const posenc_tensor* v_cache, const posenc_positions* pos,
                                                 const posenc_kv_slots* slots);

/** shift_rope: k (N, L, H, D) rotated in place by delta positions (the context shift of a KV cache). */
POSENC_C_API posenc_status posenc_shift_rope(const posenc_rope_plan* plan, const posenc_tensor* k, int64_t delta);

/** rerotate_rope: k (N, L, H, D) in place from the rotation of plan `from` to that of plan `to` at the same
 * positions (angle p * (w_to - w_from), magnitude m_to / m_from): LongRoPE's short -> long switch, dynamic NTK
 * growth, without recomputing the keys. The plans must share their geometry. */
POSENC_C_API posenc_status posenc_rerotate_rope(const posenc_rope_plan* from, const posenc_rope_plan* to,
                                                const posenc_tensor* k, const posenc_positions* pos);

/* ---- MRoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) ----------------------------------------------------------------- */

/** A multimodal RoPE plan: the plan's pairs split into temporal, height and width sections. */
typedef struct posenc_mrope_plan posenc_mrope_plan;

/** mrope_plan: sections[0..2] (>= 0, summing to R/2; HF `mrope_section`); interleaved != 0 is Qwen3-VL's
 * layout (pair i takes h if i % 3 == 1, w if i % 3 == 2), 0 Qwen2-VL's chunked one. The plan is copied. */
POSENC_C_API posenc_status posenc_mrope_plan_create(const posenc_rope_plan* plan, const int64_t* sections,
                                                    int32_t interleaved, posenc_mrope_plan** out);
POSENC_C_API void posenc_mrope_plan_destroy(posenc_mrope_plan* plan);
/** The 2D RoPE of the vision tower of the vision-language model whose config.json is at `path`
 * (vision_plan_from_hf_file: Qwen2-VL, Qwen2.5-VL, Pixtral; half-split pairs, sections {0, D/4, D/4});
 * `head_dim`, when not null, receives D. Apply it with positions (0, patch row, patch column). */
POSENC_C_API posenc_status posenc_mrope_plan_read_hf_vision(const char* path, posenc_mrope_plan** out,
                                                            int64_t* head_dim);
/** vision_positions: the (3, L) ids, L = frames * grid_h * grid_w, of a patch grid in a vision tower's token
 * order (merge 1: row-major, Pixtral; merge m: m x m blocks, Qwen2-VL) into ids[0 .. count), count = 3 L. */
POSENC_C_API posenc_status posenc_vision_positions(int64_t frames, int64_t grid_h, int64_t grid_w, int64_t merge,
                                                   int64_t* ids, int64_t count);
/** apply_mrope on x (N, L, H, D) in place: token (n, l) at positions ids[(3 n + a) L + l] of axis a (t, h, w)
 * when batch >= 0 ((N, 3, L) ids, batch = N), or ids[a L + l] for every sequence when batch = -1 ((3, L) ids).
 * inverse != 0: the transpose. */
POSENC_C_API posenc_status posenc_apply_mrope(const posenc_mrope_plan* plan, const posenc_tensor* x,
                                              const int64_t* ids, int64_t batch, int64_t length, int32_t inverse);

/* ---- 8-bit KV caches: RoPE then int8 / fp8 codes ------------------------------------------------------------ */

typedef enum posenc_quant_format {
  POSENC_QUANT_INT8 = 0,     /**< symmetric int8 (POSENC_I8 codes), round half to even, saturated */
  POSENC_QUANT_FP8_E4M3 = 1, /**< OCP E4M3 (POSENC_U8 codes), saturating to +-448 */
  POSENC_QUANT_FP8_E5M2 = 2  /**< OCP E5M2 (POSENC_U8 codes), saturating to +-57344 */
} posenc_quant_format;

/** How a tensor is quantised (posenc::quant_spec); fill it with posenc_quant_spec_init (dynamic int8). */
typedef struct posenc_quant_spec {
  uint32_t struct_size; /**< sizeof(posenc_quant_spec) */
  int32_t format;       /**< posenc_quant_format */
  const float* scales;  /**< per-head scales at scales[h * scale_stride], finite > 0; null (int8 only): dynamic,
                             one scale per token and head, written to the call's scales output */
  int64_t scale_stride; /**< 0: one scale for every head; default 1 */
} posenc_quant_spec;

POSENC_C_API void posenc_quant_spec_init(posenc_quant_spec* spec);

/** apply_rope_quantized: codes (N, L, H, D) of POSENC_I8 (int8) or POSENC_U8 (fp8) = Q(RoPE(in)); scales: the
 * dynamic int8 scales [N, L, H] (rank 3, POSENC_F32), or null with given scales. */
POSENC_C_API posenc_status posenc_apply_rope_quantized(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                                       const posenc_tensor* in, const posenc_tensor* codes,
                                                       const posenc_tensor* scales, const posenc_positions* pos,
                                                       const posenc_quant_spec* spec);
/** rope_append_kv_quantized: k rotated then quantised by k_spec into k_cache's slots, v quantised by v_spec
 * into v_cache's (8-bit caches [dim0, dim1, Hk, D]); k_scales / v_scales: [dim0, dim1, Hk] POSENC_F32 for
 * dynamic int8, else null. */
POSENC_C_API posenc_status posenc_rope_append_kv_quantized(
    const posenc_rope_plan* plan, const posenc_rope_cache* cache, const posenc_tensor* k, const posenc_tensor* v,
    const posenc_tensor* k_cache, const posenc_tensor* v_cache, const posenc_positions* pos,
    const posenc_kv_slots* slots, const posenc_quant_spec* k_spec, const posenc_quant_spec* v_spec,
    const posenc_tensor* k_scales, const posenc_tensor* v_scales);

/* ---- ALiBi ---------------------------------------------------------------------------------------------------- */

typedef enum posenc_alibi_form {
  POSENC_ALIBI_LINEAR = 0,   /**< causal decoders: slope * (key - query) */
  POSENC_ALIBI_SYMMETRIC = 1 /**< bidirectional encoders: -slope * |key - query| */
} posenc_alibi_form;

typedef enum posenc_alibi_arithmetic {
  POSENC_ALIBI_EXACT = 0, /**< double slope and sum, one rounding to the scores' dtype (the default) */
  POSENC_ALIBI_FP32 = 1   /**< float slope, float fma: float32 engines' rounding (llama.cpp); f32/f16/bf16 scores */
} posenc_alibi_arithmetic;

/** An ALiBi configuration (posenc::alibi_config); fill it with posenc_alibi_config_init. */
typedef struct posenc_alibi_config {
  uint32_t struct_size; /**< sizeof(posenc_alibi_config) */
  int32_t form;         /**< posenc_alibi_form; default linear */
  int64_t num_heads;    /**< H, the model's head count */
  double max_bias;      /**< default 8 */
  int64_t head_begin;   /**< this shard's heads [head_begin, head_end); default 0 */
  int64_t head_end;     /**< -1 = num_heads */
  int32_t arithmetic;   /**< posenc_alibi_arithmetic; default exact */
} posenc_alibi_config;

POSENC_C_API void posenc_alibi_config_init(posenc_alibi_config* config);
/** The shard's slopes into a rank-1 tensor of head_end - head_begin entries (any dtype). */
POSENC_C_API posenc_status posenc_alibi_slopes(const posenc_alibi_config* config, const posenc_tensor* out);
/** alibi_bias: the shard's bias written into out [H_local, Lq, Lk] (rank 3): query i at query_pos(0, i), keys at
 * 0 .. Lk-1 (Press et al. 2022); causal != 0 writes -inf for keys after the query. */
POSENC_C_API posenc_status posenc_alibi_bias(const posenc_alibi_config* config, const posenc_tensor* out,
                                             const posenc_positions* query_pos, int32_t causal);
/** add_alibi_bias: the bias added into attention scores [N, H_local, Lq, Lk] (rank 4), query i of sequence n at
 * query_pos(n, i); causal != 0 sets the scores of keys after the query to -inf. */
POSENC_C_API posenc_status posenc_add_alibi_bias(const posenc_alibi_config* config, const posenc_tensor* scores,
                                                 const posenc_positions* query_pos, int32_t causal);

/* ---- sinusoidal, T5, xPos ------------------------------------------------------------------------------------- */

typedef enum posenc_sinusoidal_layout {
  POSENC_SINUSOIDAL_INTERLEAVED = 0, /**< (sin, cos) pairs: Vaswani et al., tensor2tensor's original */
  POSENC_SINUSOIDAL_CONCAT = 1       /**< all sines, then all cosines: tensor2tensor get_timing_signal_1d, fairseq */
} posenc_sinusoidal_layout;

/** add_sinusoidal: out = in + PE(pos) for (N, L, D) tensors (rank 3; out null or out == in: in place). */
POSENC_C_API posenc_status posenc_add_sinusoidal(int64_t dim, double base, posenc_sinusoidal_layout layout,
                                                 const posenc_tensor* in, const posenc_tensor* out,
                                                 const posenc_positions* pos);

/** t5_relative_bucket: the bucket of relative_position = key - query (Raffel et al. 2020, HF T5Attention). */
POSENC_C_API posenc_status posenc_t5_bucket(int64_t relative_position, int32_t bidirectional, int64_t num_buckets,
                                            int64_t max_distance, int64_t* out);

/** A T5 relative-position bias: a [num_buckets, H] table of learned values, copied at creation. */
typedef struct posenc_t5_bias posenc_t5_bias;
/** t5_relative_bias with the table given as a rank-2 [num_buckets, num_heads] tensor (POSENC_F32: float
 * arithmetic, POSENC_F64: double), copied. */
POSENC_C_API posenc_status posenc_t5_bias_create(int64_t num_heads, int32_t bidirectional, int64_t num_buckets,
                                                 int64_t max_distance, const posenc_tensor* table,
                                                 posenc_t5_bias** out);
POSENC_C_API void posenc_t5_bias_destroy(posenc_t5_bias* bias);
/** add_t5_bias: scores [N, H, Lq, Lk] += table[bucket(key - query), h], query i of sequence n at
 * query_pos(n, i), keys at 0 .. Lk-1 (HF T5Attention compute_bias). */
POSENC_C_API posenc_status posenc_add_t5_bias(const posenc_t5_bias* bias, const posenc_tensor* scores,
                                              const posenc_positions* query_pos);

/** A learned absolute position table (GPT-2 wpe, BERT, OPT), copied at creation. */
typedef struct posenc_learned posenc_learned;
/** learned_position_embedding from a rank-2 [max_positions + position_offset, dim] table (POSENC_F32 or
 * POSENC_F64), copied; rows are scaled by `scale` when added (no layer norm, no dropout: inference). */
POSENC_C_API posenc_status posenc_learned_create(int64_t max_positions, int64_t dim, double scale,
                                                 int64_t position_offset, const posenc_tensor* table,
                                                 posenc_learned** out);
POSENC_C_API void posenc_learned_destroy(posenc_learned* learned);
/** out = in + scale * table[pos + position_offset] for (N, L, D) tensors (rank 3; out null or out == in: in
 * place; the table's dtype). */
POSENC_C_API posenc_status posenc_add_learned(const posenc_learned* learned, const posenc_tensor* in,
                                              const posenc_tensor* out, const posenc_positions* pos);

/** apply_xpos: RoPE with xPos scaling (Sun et al. 2022, torchscale) on (N, L, H, D) in place; queries scaled up
 * (downscale 0), keys down (downscale != 0), around position center. */
POSENC_C_API posenc_status posenc_apply_xpos(int64_t head_dim, double scale_base, double gamma, double base,
                                             posenc_rope_style style, const posenc_tensor* x,
                                             const posenc_positions* pos, int64_t center, int32_t downscale);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_C_POSENC_H_ */
