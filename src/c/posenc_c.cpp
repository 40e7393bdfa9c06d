// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The C API (include/posenc/c/posenc.h) over the C++ try_ forms: each entry turns its descriptors into views of
// the dtypes they name, calls the noexcept C++ function and maps its status; nothing is written on a rejected
// call (the C++ functions check everything first). Compiled with the kernels of posenc/src.hpp
// (POSENC_SEPARATE_COMPILATION) into libposenc, whose only exported symbols are the posenc_ functions.
#include "posenc/c/posenc.h"

#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/alibi.hpp"
#include "posenc/dispatch.hpp"
#include "posenc/io/gguf.hpp"
#include "posenc/kv_cache.hpp"
#include "posenc/learned.hpp"
#include "posenc/model_plan.hpp"
#include "posenc/mrope.hpp"
#include "posenc/quantize.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_ops.hpp"
#include "posenc/sinusoidal.hpp"
#include "posenc/t5_bias.hpp"
#include "posenc/vision_plan.hpp"
#include "posenc/xpos.hpp"
#if defined(POSENC_C_HAS_HF)
#include "posenc/io/hf_config.hpp"
#endif

namespace posenc_c_detail {
/// A handle holding the float or the double form of T, chosen at creation by the dtype it was given.
template <template <class> class T>
struct float_or_double {
  T<float> f32;
  T<double> f64;
  bool is_double = false;
  template <class F>
  decltype(auto) visit(F&& f) {
    return is_double ? f(f64) : f(f32);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return is_double ? f(f64) : f(f32);
  }
};
template <class C>
using t5_bias_t = posenc::t5_relative_bias<C>;
template <class C>
using learned_t = posenc::learned_position_embedding<C>;
}  // namespace posenc_c_detail

struct posenc_rope_plan {
  posenc::rope_plan plan;
};
struct posenc_rope_cache : posenc_c_detail::float_or_double<posenc::rope_cache> {};
struct posenc_mrope_plan {
  posenc::mrope_plan plan;
};
struct posenc_t5_bias : posenc_c_detail::float_or_double<posenc_c_detail::t5_bias_t> {};
struct posenc_learned : posenc_c_detail::float_or_double<posenc_c_detail::learned_t> {};
struct posenc_model_config {
  posenc::rope_config config;
  posenc::index_t num_heads = 0;
  posenc::index_t num_kv_heads = 0;
  posenc::index_t max_positions = 0;
};
struct posenc_model_layers {
  posenc::model_positional_plan plan;
};

namespace {

using posenc::index_t;
using posenc::status;
namespace pd = posenc::detail;

thread_local std::string last_message;

posenc_status code_of(posenc::errc c) {
  switch (c) {
    case posenc::errc::ok: return POSENC_OK;
    case posenc::errc::invalid_argument: return POSENC_INVALID_ARGUMENT;
    case posenc::errc::invalid_file: return POSENC_INVALID_FILE;
    case posenc::errc::io_error: return POSENC_IO_ERROR;
    case posenc::errc::out_of_memory: return POSENC_OUT_OF_MEMORY;
    case posenc::errc::device_error: break;
  }
  return POSENC_INTERNAL_ERROR;
}

/// Records the outcome of a call for posenc_last_error and returns its code.
posenc_status finish(const status& s) {
  try {
    last_message.assign(s.message().data(), s.message().size());
  } catch (...) {
    last_message.clear();  // the code still says what happened
  }
  return code_of(s.code());
}

/// Runs an entry's body: its status, or a code for anything thrown (an allocation of the C layer itself).
template <class F>
posenc_status guarded(const char* fn, F&& body) noexcept {
  try {
    return finish(std::forward<F>(body)());
  } catch (const std::bad_alloc&) {
    return finish(pd::out_of_memory(fn));
  } catch (...) {
    return finish(pd::fail_with(posenc::errc::device_error, fn, "unexpected C++ exception"));
  }
}

template <class T>
struct type_tag {
  using type = T;
};

/// Calls f(type_tag<T>) for the element type a posenc_dtype names.
template <class F>
status with_dtype(const char* fn, const char* name, int32_t dtype, F&& f) {
  switch (dtype) {
    case POSENC_F32: return f(type_tag<float>{});
    case POSENC_F64: return f(type_tag<double>{});
    case POSENC_F16: return f(type_tag<pd::f16_storage>{});
    case POSENC_BF16: return f(type_tag<pd::bf16_storage>{});
    default:
      return pd::fail(fn, name, " dtype=", dtype, " is not a floating posenc_dtype (1 f32, 2 f64, 3 f16, 4 bf16)");
  }
}

/// The descriptor's shape, checked for what every call needs (not null, its struct size, the rank the call
/// takes); extents, strides and data are the C++ checks' to judge.
template <std::size_t R>
status shape_of(const char* fn, const char* name, const posenc_tensor* t, const char* dims,
                std::array<index_t, R>& extents, std::array<index_t, R>& strides) {
  if (t == nullptr) return pd::fail(fn, name, " is null");
  if (t->struct_size < sizeof(posenc_tensor))
    return pd::fail(fn, name, ".struct_size=", t->struct_size, " is less than sizeof(posenc_tensor)=", sizeof(posenc_tensor));
  if (t->rank != static_cast<int32_t>(R))
    return pd::fail(fn, name, " has rank ", t->rank, "; this call takes rank ", R, " ", dims);
  for (std::size_t d = 0; d < R; ++d) {
    extents[d] = t->shape[d];
    strides[d] = t->strides[d];
  }
  return {};
}

/// Calls f(strided_view<T, R>) with T the descriptor's dtype (const T when Const).
template <std::size_t R, bool Const, class F>
status with_view(const char* fn, const char* name, const posenc_tensor* t, const char* dims, F&& f) {
  std::array<index_t, R> e{}, s{};
  POSENC_TRY(shape_of<R>(fn, name, t, dims, e, s));
  return with_dtype(fn, name, t->dtype, [&](auto tag) {
    using T = std::conditional_t<Const, const typename decltype(tag)::type, typename decltype(tag)::type>;
    return f(posenc::strided_view<T, R>(static_cast<T*>(t->data), e, s));
  });
}

/// The view of a descriptor already checked by shape_of, as T (the caller has matched T to its dtype).
template <class T, std::size_t R>
posenc::strided_view<T, R> view_as(const posenc_tensor* t) {
  std::array<index_t, R> e{}, s{};
  for (std::size_t d = 0; d < R; ++d) {
    e[d] = t->shape[d];
    s[d] = t->strides[d];
  }
  return posenc::strided_view<T, R>(static_cast<T*>(t->data), e, s);
}

/// Checks that the descriptors `others` have `first`'s dtype (a call that takes one element type for them).
inline status same_dtype(const char* fn, const char* name, const posenc_tensor* t, const char* first_name,
                         const posenc_tensor* first) {
  if (t->dtype != first->dtype)
    return pd::fail(fn, name, " dtype=", t->dtype, " must be ", first_name, "'s dtype=", first->dtype);
  return {};
}

template <class T>
status struct_size_ok(const char* fn, const char* name, const T* p) {
  if (p == nullptr) return pd::fail(fn, name, " is null");
  if (p->struct_size < sizeof(T))
    return pd::fail(fn, name, ".struct_size=", p->struct_size, " is less than sizeof=", sizeof(T), " (use the _init function)");
  return {};
}

status positions_of(const char* fn, const posenc_positions* p, posenc::positions& out) {
  POSENC_TRY(struct_size_ok(fn, "positions", p));
  if (p->index_type != POSENC_I64 && p->index_type != POSENC_I32)
    return pd::fail(fn, "positions.index_type=", p->index_type, " is not a posenc_index_type");
  const bool i64 = p->index_type == POSENC_I64;
  const auto* v64 = static_cast<const std::int64_t*>(p->values);
  const auto* v32 = static_cast<const std::int32_t*>(p->values);
  switch (p->kind) {
    case POSENC_POS_OFFSET: out = posenc::positions::offset(p->offset); return {};
    case POSENC_POS_PER_SEQUENCE:
      out = i64 ? posenc::positions::per_sequence(v64, p->batch) : posenc::positions::per_sequence(v32, p->batch);
      return {};
    case POSENC_POS_PER_TOKEN:
      out = i64 ? posenc::positions::per_token(v64, p->batch, p->length, p->row_stride)
                : posenc::positions::per_token(v32, p->batch, p->length, p->row_stride);
      return {};
    default: return pd::fail(fn, "positions.kind=", p->kind, " is not a posenc_positions_kind");
  }
}

/// Calls f(source) with the plan or the cache (exactly one given).
template <class F>
status with_source(const char* fn, const posenc_rope_plan* plan, const posenc_rope_cache* cache, F&& f) {
  if ((plan == nullptr) == (cache == nullptr))
    return pd::fail(fn, "give exactly one of plan and cache (", plan ? "both" : "neither", " given)");
  if (plan != nullptr) return f(plan->plan);
  return cache->visit(f);
}

constexpr const char* nlhd = "(N, L, H, D)";

status rope_config_of(const char* fn, const posenc_rope_config* c, posenc::rope_config& cfg) {
  POSENC_TRY(struct_size_ok(fn, "config", c));
  if (c->style != POSENC_ROPE_INTERLEAVED && c->style != POSENC_ROPE_HALF_SPLIT)
    return pd::fail(fn, "config.style=", c->style, " is not a posenc_rope_style");
  cfg.head_dim = c->head_dim;
  cfg.rotary_dim = c->rotary_dim;
  cfg.rotary_offset = c->rotary_offset;
  cfg.style = c->style == POSENC_ROPE_INTERLEAVED ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
  cfg.base = c->base;
  posenc::rope_scaling& s = cfg.scaling;
  using st = posenc::rope_scaling_type;
  switch (c->scaling) {
    case POSENC_SCALING_NONE: s.type = st::none; break;
    case POSENC_SCALING_LINEAR: s.type = st::linear; break;
    case POSENC_SCALING_NTK: s.type = st::ntk; break;
    case POSENC_SCALING_DYNAMIC_NTK: s.type = st::dynamic_ntk; break;
    case POSENC_SCALING_YARN: s.type = st::yarn; break;
    case POSENC_SCALING_DEEPSEEK_YARN: s.type = st::deepseek_yarn; break;
    case POSENC_SCALING_LLAMA3: s.type = st::llama3; break;
    case POSENC_SCALING_LONGROPE: s.type = st::longrope; break;
    default: return pd::fail(fn, "config.scaling=", c->scaling, " is not a posenc_rope_scaling");
  }
  switch (c->policy) {
    case POSENC_POLICY_PER_LENGTH: break;
    case POSENC_POLICY_FIXED_AT_MAX:
      if (s.type != st::dynamic_ntk) return pd::fail(fn, "config.policy fixed_at_max is for dynamic NTK only");
      s.ntk_policy = posenc::dynamic_ntk_policy::fixed_at_max;
      break;
    case POSENC_POLICY_PAST_ORIGINAL:
    case POSENC_POLICY_ALWAYS_SHORT:
    case POSENC_POLICY_ALWAYS_LONG:
      if (s.type != st::longrope) return pd::fail(fn, "config.policy=", c->policy, " is for LongRoPE only");
      s.long_policy = c->policy == POSENC_POLICY_PAST_ORIGINAL   ? posenc::longrope_policy::past_original
                      : c->policy == POSENC_POLICY_ALWAYS_SHORT ? posenc::longrope_policy::always_short
                                                                : posenc::longrope_policy::always_long;
      break;
    default: return pd::fail(fn, "config.policy=", c->policy, " is not a posenc_length_policy");
  }
  s.factor = c->factor;
  s.original_max_positions = c->original_max_positions;
  s.beta_fast = c->beta_fast;
  s.beta_slow = c->beta_slow;
  s.truncate = c->truncate != 0;
  s.mscale = c->mscale;
  s.mscale_all_dim = c->mscale_all_dim;
  if (c->attention_factor != 0.0) s.attention_factor = c->attention_factor;
  s.low_freq_factor = c->low_freq_factor;
  s.high_freq_factor = c->high_freq_factor;
  if (c->longrope_factor_count < 0)
    return pd::fail(fn, "config.longrope_factor_count=", c->longrope_factor_count, " must be >= 0");
  if (c->longrope_factor_count > 0) {
    if (c->short_factor == nullptr || c->long_factor == nullptr)
      return pd::fail(fn, "config.short_factor and long_factor must not be null with longrope_factor_count > 0");
    s.short_factor.assign(c->short_factor, c->short_factor + c->longrope_factor_count);
    s.long_factor.assign(c->long_factor, c->long_factor + c->longrope_factor_count);
  }
  if (c->freq_factor_count < 0) return pd::fail(fn, "config.freq_factor_count=", c->freq_factor_count, " must be >= 0");
  if (c->freq_factor_count > 0) {
    if (c->freq_factors == nullptr) return pd::fail(fn, "config.freq_factors is null with freq_factor_count > 0");
    cfg.freq_factors.assign(c->freq_factors, c->freq_factors + c->freq_factor_count);
  }
  return {};
}

status alibi_config_of(const char* fn, const posenc_alibi_config* c, posenc::alibi_config& cfg) {
  POSENC_TRY(struct_size_ok(fn, "config", c));
  if (c->form != POSENC_ALIBI_LINEAR && c->form != POSENC_ALIBI_SYMMETRIC)
    return pd::fail(fn, "config.form=", c->form, " is not a posenc_alibi_form");
  cfg.num_heads = c->num_heads;
  cfg.max_bias = c->max_bias;
  cfg.head_begin = c->head_begin;
  cfg.head_end = c->head_end;
  cfg.form = c->form == POSENC_ALIBI_LINEAR ? posenc::alibi_form::linear : posenc::alibi_form::symmetric;
  if (c->arithmetic != POSENC_ALIBI_EXACT && c->arithmetic != POSENC_ALIBI_FP32)
    return pd::fail(fn, "config.arithmetic=", c->arithmetic, " is not a posenc_alibi_arithmetic");
  cfg.arithmetic = c->arithmetic == POSENC_ALIBI_FP32 ? posenc::alibi_arithmetic::fp32 : posenc::alibi_arithmetic::exact;
  return {};
}


status kv_slots_of(const char* fn, const posenc_kv_slots* slots, posenc::kv_slots& out) {
  POSENC_TRY(struct_size_ok(fn, "slots", slots));
  if (slots->paged != 0 && slots->paged != 1) return pd::fail(fn, "slots.paged=", slots->paged, " must be 0 or 1");
  out = slots->paged ? posenc::kv_slots::paged(slots->values, slots->batch, slots->length, slots->row_stride)
                     : posenc::kv_slots::contiguous(slots->values, slots->batch);
  return {};
}

status quant_spec_of(const char* fn, const char* name, const posenc_quant_spec* c, posenc::quant_spec& q) {
  POSENC_TRY(struct_size_ok(fn, name, c));
  switch (c->format) {
    case POSENC_QUANT_INT8: q.format = posenc::quant_format::int8; break;
    case POSENC_QUANT_FP8_E4M3: q.format = posenc::quant_format::fp8_e4m3; break;
    case POSENC_QUANT_FP8_E5M2: q.format = posenc::quant_format::fp8_e5m2; break;
    default: return pd::fail(fn, name, ".format=", c->format, " is not a posenc_quant_format");
  }
  q.scales = c->scales;
  q.scale_stride = c->scale_stride;
  return {};
}

/// Calls f(type_tag<Code>) for 8-bit codes: POSENC_I8 (int8) or POSENC_U8 (fp8).
template <class F>
status with_code_type(const char* fn, const char* name, const posenc_tensor* t, F&& f) {
  if (t == nullptr) return pd::fail(fn, name, " is null");
  if (t->dtype == POSENC_I8) return f(type_tag<std::int8_t>{});
  if (t->dtype == POSENC_U8) return f(type_tag<std::uint8_t>{});
  return pd::fail(fn, name, " dtype=", t->dtype, " must be POSENC_I8 (int8 codes) or POSENC_U8 (fp8 codes)");
}

/// A rank-3 float scales output, or the empty view for null (given scales).
status scales_of(const char* fn, const char* name, const posenc_tensor* t, posenc::strided_view<float, 3>& out) {
  if (t == nullptr) {
    out = {};
    return {};
  }
  std::array<index_t, 3> e{}, s{};
  POSENC_TRY(shape_of<3>(fn, name, t, "[dim0, dim1, H]", e, s));
  if (t->dtype != POSENC_F32) return pd::fail(fn, name, " dtype=", t->dtype, " must be POSENC_F32");
  out = posenc::strided_view<float, 3>(static_cast<float*>(t->data), e, s);
  return {};
}

/// Copies a rank-2 table descriptor [rows, cols] of C into `to` (same extents), converting from its dtype.
template <class C>
status copy_table(const char* fn, const posenc_tensor* t, posenc::strided_view<C, 2> to) {
  std::array<index_t, 2> e{}, s{};
  POSENC_TRY(shape_of<2>(fn, "table", t, "[rows, cols]", e, s));
  if (e[0] != to.extent(0) || e[1] != to.extent(1))
    return pd::fail(fn, "table shape (", e[0], ", ", e[1], ") must be (", to.extent(0), ", ", to.extent(1), ")");
  return with_dtype(fn, "table", t->dtype, [&](auto tag) -> status {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, C>) {
      return pd::fail(fn, "table dtype=", t->dtype, " must be the handle's arithmetic type (POSENC_F32 or POSENC_F64)");
    } else {
      const posenc::strided_view<const T, 2> from(static_cast<const T*>(t->data), e, s);
      POSENC_TRY(pd::check_view(fn, "table", from, false));
      for (index_t i = 0; i < e[0]; ++i)
        for (index_t j = 0; j < e[1]; ++j) to(i, j) = from(i, j);
      return {};
    }
  });
}


/// The ALiBi bias entries: the configuration, the query positions and the mask, then call(cfg, view, pos, mask)
/// on the rank-R scores.
template <std::size_t R, class F>
posenc_status alibi_entry(const char* fn, const posenc_alibi_config* config, const posenc_tensor* t, const char* name,
                          const char* dims, const posenc_positions* query_pos, int32_t causal, F&& call) {
  return guarded(fn, [&]() -> status {
    posenc::alibi_config cfg;
    POSENC_TRY(alibi_config_of(fn, config, cfg));
    posenc::positions p;
    POSENC_TRY(positions_of(fn, query_pos, p));
    const auto mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
    return with_view<R, false>(fn, name, t, dims, [&](auto v) { return call(cfg, v, p, mask); });
  });
}

/// The four tensors of a KV-cache append: rank 4 each, v of k's dtype (the caches' dtypes are each call's).
status append_descriptors(const char* fn, const posenc_tensor* k, const posenc_tensor* v, const posenc_tensor* k_cache,
                          const posenc_tensor* v_cache) {
  constexpr const char* cache_dims = "[dim0, dim1, Hk, D]";
  std::array<index_t, 4> e{}, st{};
  POSENC_TRY(shape_of<4>(fn, "k", k, nlhd, e, st));
  POSENC_TRY(shape_of<4>(fn, "v", v, nlhd, e, st));
  POSENC_TRY(shape_of<4>(fn, "k_cache", k_cache, cache_dims, e, st));
  POSENC_TRY(shape_of<4>(fn, "v_cache", v_cache, cache_dims, e, st));
  return same_dtype(fn, "v", v, "k", k);
}
/// A rope_config into the C struct (whose struct_size the caller checked); the arrays stay `r`'s.
void fill_rope_config(const posenc::rope_config& r, posenc_rope_config* c) {
  const posenc::rope_scaling& s = r.scaling;
  posenc_rope_config_init(c);
  c->style = r.style == posenc::rope_style::interleaved ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALF_SPLIT;
  c->head_dim = r.head_dim;
  c->rotary_dim = r.rotary_dim;
  c->rotary_offset = r.rotary_offset;
  c->base = r.base;
  using st = posenc::rope_scaling_type;
  constexpr std::array<std::pair<st, int32_t>, 8> types{{{st::none, POSENC_SCALING_NONE},
                                                         {st::linear, POSENC_SCALING_LINEAR},
                                                         {st::ntk, POSENC_SCALING_NTK},
                                                         {st::dynamic_ntk, POSENC_SCALING_DYNAMIC_NTK},
                                                         {st::yarn, POSENC_SCALING_YARN},
                                                         {st::deepseek_yarn, POSENC_SCALING_DEEPSEEK_YARN},
                                                         {st::llama3, POSENC_SCALING_LLAMA3},
                                                         {st::longrope, POSENC_SCALING_LONGROPE}}};
  for (const auto& t : types)
    if (t.first == s.type) c->scaling = t.second;
  if (s.type == st::dynamic_ntk && s.ntk_policy == posenc::dynamic_ntk_policy::fixed_at_max)
    c->policy = POSENC_POLICY_FIXED_AT_MAX;
  if (s.type == st::longrope) {
    switch (s.long_policy) {
      case posenc::longrope_policy::per_length: c->policy = POSENC_POLICY_PER_LENGTH; break;
      case posenc::longrope_policy::past_original: c->policy = POSENC_POLICY_PAST_ORIGINAL; break;
      case posenc::longrope_policy::always_short: c->policy = POSENC_POLICY_ALWAYS_SHORT; break;
      case posenc::longrope_policy::always_long: c->policy = POSENC_POLICY_ALWAYS_LONG; break;
    }
  }
  c->factor = s.factor;
  c->original_max_positions = s.original_max_positions;
  c->beta_fast = s.beta_fast;
  c->beta_slow = s.beta_slow;
  c->truncate = s.truncate ? 1 : 0;
  c->mscale = s.mscale;
  c->mscale_all_dim = s.mscale_all_dim;
  c->attention_factor = s.attention_factor.value_or(0.0);
  c->low_freq_factor = s.low_freq_factor;
  c->high_freq_factor = s.high_freq_factor;
  c->short_factor = s.short_factor.empty() ? nullptr : s.short_factor.data();
  c->long_factor = s.long_factor.empty() ? nullptr : s.long_factor.data();
  c->longrope_factor_count = static_cast<int64_t>(s.short_factor.size());
  c->freq_factors = r.freq_factors.empty() ? nullptr : r.freq_factors.data();
  c->freq_factor_count = static_cast<int64_t>(r.freq_factors.size());
}


/// The layer `layer` of `m`, checked (null handle, range; NoPE when `need_rope`).
status layer_of(const char* fn, const posenc_model_layers* m, int64_t layer, bool need_rope,
                const posenc::layer_positional*& out) {
  if (m == nullptr) return pd::fail(fn, "model is null");
  POSENC_TRY(m->plan.check_layer(layer));
  out = &m->plan.layers[static_cast<std::size_t>(layer)];
  if (need_rope && !out->rope)
    return pd::fail(fn, "layer ", layer, " of ", m->plan.model_type, " has no RoPE (a NoPE layer: q and k are not rotated)");
  return {};
}

}  // namespace

extern "C" {

const char* posenc_version(void) { return POSENC_VERSION_STRING; }
int posenc_c_api_version(void) { return 1; }
const char* posenc_active_isa(void) { return posenc::isa_name(posenc::active_isa()); }

const char* posenc_status_name(posenc_status s) {
  switch (s) {
    case POSENC_OK: return "ok";
    case POSENC_INVALID_ARGUMENT: return "invalid_argument";
    case POSENC_INVALID_FILE: return "invalid_file";
    case POSENC_IO_ERROR: return "io_error";
    case POSENC_OUT_OF_MEMORY: return "out_of_memory";
    case POSENC_INTERNAL_ERROR: return "internal_error";
  }
  return "unknown";
}

size_t posenc_last_error(char* buf, size_t size) {
  const std::string& m = last_message;
  if (buf != nullptr && size > 0) {
    const std::size_t n = m.size() < size - 1 ? m.size() : size - 1;
    std::memcpy(buf, m.data(), n);
    buf[n] = '\0';
  }
  return m.size();
}

posenc_tensor posenc_tensor_contiguous(void* data, posenc_dtype dtype, int32_t rank, const int64_t* shape) {
  posenc_tensor t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof(posenc_tensor);
  t.dtype = dtype;
  t.rank = rank;
  t.data = data;
  if (rank < 1 || rank > POSENC_MAX_RANK || shape == nullptr) return t;  // the call using it rejects the rank
  int64_t s = 1;
  for (int32_t d = rank; d-- > 0;) {
    t.shape[d] = shape[d];
    t.strides[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
  return t;
}

posenc_positions posenc_positions_offset(int64_t offset) {
  posenc_positions p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof(posenc_positions);
  p.kind = POSENC_POS_OFFSET;
  p.offset = offset;
  p.row_stride = -1;
  return p;
}
posenc_positions posenc_positions_per_sequence(const void* starts, posenc_index_type type, int64_t batch) {
  posenc_positions p = posenc_positions_offset(0);
  p.kind = POSENC_POS_PER_SEQUENCE;
  p.index_type = type;
  p.values = starts;
  p.batch = batch;
  return p;
}
posenc_positions posenc_positions_per_token(const void* ids, posenc_index_type type, int64_t batch, int64_t length,
                                            int64_t row_stride) {
  posenc_positions p = posenc_positions_per_sequence(ids, type, batch);
  p.kind = POSENC_POS_PER_TOKEN;
  p.length = length;
  p.row_stride = row_stride;
  return p;
}

void posenc_rope_config_init(posenc_rope_config* c) {
  if (c == nullptr) return;
  std::memset(c, 0, sizeof *c);
  c->struct_size = sizeof(posenc_rope_config);
  c->style = POSENC_ROPE_HALF_SPLIT;
  c->base = 10000.0;
  c->factor = 1.0;
  c->beta_fast = 32.0;
  c->beta_slow = 1.0;
  c->truncate = 1;
  c->low_freq_factor = 1.0;
  c->high_freq_factor = 4.0;
}

posenc_status posenc_rope_plan_create(const posenc_rope_config* config, int64_t seq_len, posenc_rope_plan** out) {
  constexpr const char* fn = "rope_plan_create";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    posenc::rope_config cfg;
    POSENC_TRY(rope_config_of(fn, config, cfg));
    posenc::rope_plan plan;
    POSENC_TRY(posenc::try_make_rope_plan(cfg, seq_len, plan));
    *out = new posenc_rope_plan{std::move(plan)};
    return {};
  });
}
void posenc_rope_plan_destroy(posenc_rope_plan* plan) { delete plan; }
int64_t posenc_rope_plan_head_dim(const posenc_rope_plan* p) { return p ? p->plan.head_dim() : 0; }
int64_t posenc_rope_plan_rotary_dim(const posenc_rope_plan* p) { return p ? p->plan.rotary_dim() : 0; }
int32_t posenc_rope_plan_style(const posenc_rope_plan* p) {
  return p && p->plan.style() == posenc::rope_style::interleaved ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALF_SPLIT;
}
double posenc_rope_plan_magnitude(const posenc_rope_plan* p) { return p ? p->plan.magnitude() : 0.0; }
double posenc_rope_plan_logit_scale(const posenc_rope_plan* p) { return p ? p->plan.logit_scale() : 0.0; }
posenc_status posenc_rope_plan_inv_freq(const posenc_rope_plan* p, double* out, int64_t count) {
  constexpr const char* fn = "rope_plan_inv_freq";
  return guarded(fn, [&]() -> status {
    if (p == nullptr) return pd::fail(fn, "plan is null");
    if (count != p->plan.pairs()) return pd::fail(fn, "count=", count, " must be the plan's pairs R/2=", p->plan.pairs());
    if (count > 0 && out == nullptr) return pd::fail(fn, "out is null");
    for (index_t i = 0; i < count; ++i) out[i] = p->plan.inv_freq()[static_cast<std::size_t>(i)];
    return {};
  });
}

posenc_status posenc_rope_cache_create(const posenc_rope_plan* plan, int64_t max_positions, posenc_dtype dtype,
                                       posenc_rope_cache** out) {
  constexpr const char* fn = "rope_cache_create";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (plan == nullptr) return pd::fail(fn, "plan is null");
    if (dtype != POSENC_F32 && dtype != POSENC_F64)
      return pd::fail(fn, "dtype=", static_cast<int>(dtype), ": a cache holds POSENC_F32 or POSENC_F64");
    auto c = std::make_unique<posenc_rope_cache>();
    c->is_double = dtype == POSENC_F64;
    POSENC_TRY(c->visit([&](auto& t) { return std::decay_t<decltype(t)>::try_create(plan->plan, max_positions, t); }));
    *out = c.release();
    return {};
  });
}
void posenc_rope_cache_destroy(posenc_rope_cache* cache) { delete cache; }
int64_t posenc_rope_cache_max_positions(const posenc_rope_cache* c) {
  return c ? c->visit([](const auto& t) { return t.max_positions(); }) : 0;
}

posenc_status posenc_model_config_read_hf(const char* path, posenc_model_config** out) {
  constexpr const char* fn = "model_config_read_hf";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (path == nullptr) return pd::fail(fn, "path is null");
#if defined(POSENC_C_HAS_HF)
    posenc::hf_rope_info info;
    POSENC_TRY(posenc::try_rope_config_from_hf_file(path, info));
    *out = new posenc_model_config{info.config, info.num_attention_heads, info.num_key_value_heads,
                                   info.max_position_embeddings};
    return {};
#else
    return pd::fail(fn, "this libposenc was built without nlohmann/json (Hugging Face config.json support)");
#endif
  });
}
posenc_status posenc_model_config_read_gguf(const char* path, posenc_model_config** out) {
  constexpr const char* fn = "model_config_read_gguf";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (path == nullptr) return pd::fail(fn, "path is null");
    posenc::gguf_rope_info info;
    POSENC_TRY(posenc::try_read_gguf_rope(path, info));
    *out = new posenc_model_config{info.config, info.head_count, info.head_count_kv, info.context_length};
    return {};
  });
}
void posenc_model_config_destroy(posenc_model_config* m) { delete m; }
int64_t posenc_model_config_num_heads(const posenc_model_config* m) { return m ? m->num_heads : 0; }
int64_t posenc_model_config_num_kv_heads(const posenc_model_config* m) { return m ? m->num_kv_heads : 0; }
int64_t posenc_model_config_max_positions(const posenc_model_config* m) { return m ? m->max_positions : 0; }


posenc_status posenc_model_config_rope(const posenc_model_config* m, posenc_rope_config* c) {
  constexpr const char* fn = "model_config_rope";
  return guarded(fn, [&]() -> status {
    if (m == nullptr) return pd::fail(fn, "model is null");
    POSENC_TRY(struct_size_ok(fn, "config", c));
    fill_rope_config(m->config, c);
    return {};
  });
}

posenc_status posenc_model_config_plan(const posenc_model_config* m, int64_t seq_len, posenc_rope_plan** out) {
  constexpr const char* fn = "model_config_plan";
  return guarded(fn, [&]() -> status {
    if (m == nullptr) return pd::fail(fn, "model is null");
    if (out == nullptr) return pd::fail(fn, "out is null");
    posenc::rope_plan plan;
    POSENC_TRY(posenc::try_make_rope_plan(m->config, seq_len, plan));
    *out = new posenc_rope_plan{std::move(plan)};
    return {};
  });
}

void posenc_layer_info_init(posenc_layer_info* info) {
  if (info == nullptr) return;
  std::memset(info, 0, sizeof *info);
  info->struct_size = sizeof(posenc_layer_info);
}

posenc_status posenc_model_layers_read_hf(const char* path, posenc_model_layers** out) {
  constexpr const char* fn = "model_layers_read_hf";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (path == nullptr) return pd::fail(fn, "path is null");
#if defined(POSENC_C_HAS_HF)
    auto m = std::make_unique<posenc_model_layers>();
    POSENC_TRY(posenc::try_model_plan_from_hf_file(path, m->plan));
    *out = m.release();
    return {};
#else
    return pd::fail(fn, "this libposenc was built without nlohmann/json (Hugging Face config.json support)");
#endif
  });
}
posenc_status posenc_model_layers_read_gguf(const char* path, posenc_model_layers** out) {
  constexpr const char* fn = "model_layers_read_gguf";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (path == nullptr) return pd::fail(fn, "path is null");
    auto m = std::make_unique<posenc_model_layers>();
    POSENC_TRY(posenc::try_read_gguf_model_plan(path, m->plan));
    *out = m.release();
    return {};
  });
}
void posenc_model_layers_destroy(posenc_model_layers* m) { delete m; }
int64_t posenc_model_layers_count(const posenc_model_layers* m) { return m ? m->plan.num_layers() : 0; }


posenc_status posenc_model_layers_layer(const posenc_model_layers* m, int64_t layer, posenc_layer_info* info) {
  constexpr const char* fn = "model_layers_layer";
  return guarded(fn, [&]() -> status {
    const posenc::layer_positional* l = nullptr;
    POSENC_TRY(layer_of(fn, m, layer, false, l));
    POSENC_TRY(struct_size_ok(fn, "info", info));
    posenc_layer_info_init(info);
    info->rope = l->rope ? 1 : 0;
    info->attention = static_cast<int32_t>(l->attention);
    info->window = l->window;
    info->temperature = l->temperature.enabled ? 1 : 0;
    info->temperature_floor_scale = l->temperature.floor_scale;
    info->temperature_attn_scale = l->temperature.attn_scale;
    info->temperature_offset = l->temperature.offset;
    return {};
  });
}
posenc_status posenc_model_layers_rope(const posenc_model_layers* m, int64_t layer, posenc_rope_config* config) {
  constexpr const char* fn = "model_layers_rope";
  return guarded(fn, [&]() -> status {
    const posenc::layer_positional* l = nullptr;
    POSENC_TRY(layer_of(fn, m, layer, true, l));
    POSENC_TRY(struct_size_ok(fn, "config", config));
    fill_rope_config(l->config, config);
    return {};
  });
}
posenc_status posenc_model_layers_plan(const posenc_model_layers* m, int64_t layer, int64_t seq_len,
                                       posenc_rope_plan** out) {
  constexpr const char* fn = "model_layers_plan";
  return guarded(fn, [&]() -> status {
    const posenc::layer_positional* l = nullptr;
    POSENC_TRY(layer_of(fn, m, layer, true, l));
    if (out == nullptr) return pd::fail(fn, "out is null");
    posenc::rope_plan plan;
    POSENC_TRY(posenc::try_make_rope_plan(l->config, seq_len, plan));
    *out = new posenc_rope_plan{std::move(plan)};
    return {};
  });
}
posenc_status posenc_model_layers_temperature(const posenc_model_layers* m, int64_t layer, int64_t position,
                                              double* out) {
  constexpr const char* fn = "model_layers_temperature";
  return guarded(fn, [&]() -> status {
    const posenc::layer_positional* l = nullptr;
    POSENC_TRY(layer_of(fn, m, layer, false, l));
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (position < 0) return pd::fail(fn, "position=", position, " must be >= 0");
    *out = l->temperature.scale(position);
    return {};
  });
}

posenc_status posenc_apply_rope(const posenc_rope_plan* plan, const posenc_rope_cache* cache, const posenc_tensor* in,
                                const posenc_tensor* out, const posenc_positions* pos, int32_t inverse) {
  constexpr const char* fn = "apply_rope";
  return guarded(fn, [&]() -> status {
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    const bool in_place = out == nullptr || out == in;
    return with_source(fn, plan, cache, [&](const auto& src) {
      if (in_place) {
        return with_view<4, false>(fn, "x", in, nlhd, [&](auto x) {
          return inverse ? posenc::try_apply_rope_backward(src, x, p) : posenc::try_apply_rope(src, x, p);
        });
      }
      return with_view<4, true>(fn, "in", in, nlhd, [&](auto x) {
        return with_view<4, false>(fn, "out", out, nlhd, [&](auto y) {
          return inverse ? posenc::try_apply_rope_backward(src, x, y, p) : posenc::try_apply_rope(src, x, y, p);
        });
      });
    });
  });
}

posenc_status posenc_apply_rope_qk(const posenc_rope_plan* plan, const posenc_rope_cache* cache, const posenc_tensor* q,
                                   const posenc_tensor* k, const posenc_positions* pos) {
  constexpr const char* fn = "apply_rope_qk";
  return guarded(fn, [&]() -> status {
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    return with_source(fn, plan, cache, [&](const auto& src) {
      return with_view<4, false>(fn, "q", q, nlhd, [&](auto qv) {
        return with_view<4, false>(fn, "k", k, nlhd, [&](auto kv) {
          if constexpr (std::is_same_v<std::decay_t<decltype(qv)>, std::decay_t<decltype(kv)>>) {
            return posenc::try_apply_rope_qk(src, qv, kv, p);
          } else {
            return pd::fail(fn, "q and k must have one dtype (", q->dtype, " and ", k->dtype, ")");
          }
        });
      });
    });
  });
}

posenc_kv_slots posenc_kv_slots_paged(const int64_t* slot_mapping, int64_t batch, int64_t length) {
  posenc_kv_slots s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof(posenc_kv_slots);
  s.paged = 1;
  s.values = slot_mapping;
  s.batch = batch;
  s.length = length;
  return s;
}
posenc_kv_slots posenc_kv_slots_contiguous(const int64_t* cached_lengths, int64_t batch) {
  posenc_kv_slots s = posenc_kv_slots_paged(cached_lengths, batch, -1);
  s.paged = 0;
  return s;
}

posenc_status posenc_rope_append_kv(const posenc_rope_plan* plan, const posenc_rope_cache* cache, const posenc_tensor* q,
                                    const posenc_tensor* k, const posenc_tensor* v, const posenc_tensor* k_cache,
                                    const posenc_tensor* v_cache, const posenc_positions* pos,
                                    const posenc_kv_slots* slots) {
  constexpr const char* fn = "rope_append_kv";
  return guarded(fn, [&]() -> status {
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    posenc::kv_slots ks;
    POSENC_TRY(kv_slots_of(fn, slots, ks));
    // One dtype for q, k and v (a fused QKV buffer) and one for the two caches: 4 x 4 combinations.
    POSENC_TRY(append_descriptors(fn, k, v, k_cache, v_cache));
    std::array<index_t, 4> e{}, st{};
    POSENC_TRY(same_dtype(fn, "v_cache", v_cache, "k_cache", k_cache));
    if (q != nullptr) {
      POSENC_TRY(shape_of<4>(fn, "q", q, nlhd, e, st));
      POSENC_TRY(same_dtype(fn, "q", q, "k", k));
    }
    return with_source(fn, plan, cache, [&](const auto& src) {
      return with_dtype(fn, "k", k->dtype, [&](auto in_tag) {
        return with_dtype(fn, "k_cache", k_cache->dtype, [&](auto cache_tag) -> status {
          using I = typename decltype(in_tag)::type;
          using C = typename decltype(cache_tag)::type;
          const auto kv = view_as<const I, 4>(k);
          const auto vv = view_as<const I, 4>(v);
          const auto kc = view_as<C, 4>(k_cache);
          const auto vc = view_as<C, 4>(v_cache);
          if (q == nullptr) return posenc::try_rope_append_kv(src, kv, vv, kc, vc, p, ks);
          return posenc::try_rope_qk_append_kv(src, view_as<I, 4>(q), kv, vv, kc, vc, p, ks);
        });
      });
    });
  });
}

posenc_status posenc_shift_rope(const posenc_rope_plan* plan, const posenc_tensor* k, int64_t delta) {
  constexpr const char* fn = "shift_rope";
  return guarded(fn, [&]() -> status {
    if (plan == nullptr) return pd::fail(fn, "plan is null");
    return with_view<4, false>(fn, "k", k, nlhd, [&](auto kv) { return posenc::try_shift_rope(plan->plan, kv, delta); });
  });
}

void posenc_alibi_config_init(posenc_alibi_config* c) {
  if (c == nullptr) return;
  std::memset(c, 0, sizeof *c);
  c->struct_size = sizeof(posenc_alibi_config);
  c->form = POSENC_ALIBI_LINEAR;
  c->max_bias = 8.0;
  c->head_end = -1;
  c->arithmetic = POSENC_ALIBI_EXACT;
}


posenc_status posenc_alibi_slopes(const posenc_alibi_config* config, const posenc_tensor* out) {
  constexpr const char* fn = "alibi_slopes";
  return guarded(fn, [&]() -> status {
    posenc::alibi_config cfg;
    POSENC_TRY(alibi_config_of(fn, config, cfg));
    return with_view<1, false>(fn, "out", out, "[H_local]", [&](auto v) { return posenc::try_alibi_slopes(cfg, v); });
  });
}

posenc_status posenc_alibi_bias(const posenc_alibi_config* config, const posenc_tensor* out,
                                const posenc_positions* query_pos, int32_t causal) {
  return alibi_entry<3>("alibi_bias", config, out, "out", "[H_local, Lq, Lk]", query_pos, causal,
                        [](const auto& cfg, auto v, const auto& p, auto mask) { return posenc::try_alibi_bias(cfg, v, p, mask); });
}

posenc_status posenc_add_alibi_bias(const posenc_alibi_config* config, const posenc_tensor* scores,
                                    const posenc_positions* query_pos, int32_t causal) {
  return alibi_entry<4>("add_alibi_bias", config, scores, "scores", "[N, H_local, Lq, Lk]", query_pos, causal,
                        [](const auto& cfg, auto v, const auto& p, auto mask) {
                          return posenc::try_add_alibi_bias(cfg, v, p, mask);
                        });
}

posenc_status posenc_add_sinusoidal(int64_t dim, double base, posenc_sinusoidal_layout layout, const posenc_tensor* in,
                                    const posenc_tensor* out, const posenc_positions* pos) {
  constexpr const char* fn = "add_sinusoidal";
  return guarded(fn, [&]() -> status {
    if (layout != POSENC_SINUSOIDAL_INTERLEAVED && layout != POSENC_SINUSOIDAL_CONCAT)
      return pd::fail(fn, "layout=", static_cast<int>(layout), " is not a posenc_sinusoidal_layout");
    posenc::sinusoidal_config cfg;
    cfg.dim = dim;
    cfg.base = base;
    cfg.layout = layout == POSENC_SINUSOIDAL_INTERLEAVED ? posenc::sinusoidal_layout::interleaved
                                                         : posenc::sinusoidal_layout::concat;
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    constexpr const char* dims = "(N, L, D)";
    if (out == nullptr || out == in)
      return with_view<3, false>(fn, "x", in, dims, [&](auto x) { return posenc::try_add_sinusoidal(cfg, x, p); });
    return with_view<3, true>(fn, "in", in, dims, [&](auto x) {
      return with_view<3, false>(fn, "out", out, dims, [&](auto y) -> status {
        using X = typename std::decay_t<decltype(x)>::element_type;
        using Y = typename std::decay_t<decltype(y)>::element_type;
        if constexpr (std::is_same_v<std::remove_const_t<X>, Y>) {
          return posenc::try_add_sinusoidal(cfg, x, y, p);
        } else {
          return pd::fail(fn, "in and out must have one dtype (", in->dtype, " and ", out->dtype, ")");
        }
      });
    });
  });
}

posenc_status posenc_t5_bucket(int64_t relative_position, int32_t bidirectional, int64_t num_buckets,
                               int64_t max_distance, int64_t* out) {
  constexpr const char* fn = "t5_bucket";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    std::int64_t b = 0;
    POSENC_TRY(posenc::try_t5_relative_bucket(relative_position, bidirectional != 0, num_buckets, max_distance, b));
    *out = b;
    return {};
  });
}

posenc_status posenc_apply_xpos(int64_t head_dim, double scale_base, double gamma, double base,
                                posenc_rope_style style, const posenc_tensor* x, const posenc_positions* pos,
                                int64_t center, int32_t downscale) {
  constexpr const char* fn = "apply_xpos";
  return guarded(fn, [&]() -> status {
    if (style != POSENC_ROPE_INTERLEAVED && style != POSENC_ROPE_HALF_SPLIT)
      return pd::fail(fn, "style=", static_cast<int>(style), " is not a posenc_rope_style");
    posenc::xpos_config cfg;
    cfg.head_dim = head_dim;
    cfg.scale_base = scale_base;
    cfg.gamma = gamma;
    cfg.base = base;
    cfg.style = style == POSENC_ROPE_INTERLEAVED ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    posenc::xpos_plan plan;
    POSENC_TRY(posenc::xpos_plan::try_create(cfg, plan));
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    const auto mode = downscale ? posenc::xpos_mode::downscale : posenc::xpos_mode::upscale;
    return with_view<4, false>(fn, "x", x, nlhd, [&](auto v) { return posenc::try_apply_xpos(plan, v, p, center, mode); });
  });
}


posenc_status posenc_rerotate_rope(const posenc_rope_plan* from, const posenc_rope_plan* to, const posenc_tensor* k,
                                   const posenc_positions* pos) {
  constexpr const char* fn = "rerotate_rope";
  return guarded(fn, [&]() -> status {
    if (from == nullptr || to == nullptr) return pd::fail(fn, from == nullptr ? "from" : "to", " is null");
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    return with_view<4, false>(fn, "k", k, nlhd,
                               [&](auto kv) { return posenc::try_rerotate_rope(from->plan, to->plan, kv, p); });
  });
}

posenc_status posenc_mrope_plan_create(const posenc_rope_plan* plan, const int64_t* sections, int32_t interleaved,
                                       posenc_mrope_plan** out) {
  constexpr const char* fn = "mrope_plan_create";
  return guarded(fn, [&]() -> status {
    if (plan == nullptr) return pd::fail(fn, "plan is null");
    if (sections == nullptr) return pd::fail(fn, "sections is null");
    if (out == nullptr) return pd::fail(fn, "out is null");
    auto m = std::make_unique<posenc_mrope_plan>();
    POSENC_TRY(posenc::mrope_plan::try_create(plan->plan, {sections[0], sections[1], sections[2]},
                                              interleaved ? posenc::mrope_layout::interleaved
                                                          : posenc::mrope_layout::chunked,
                                              m->plan));
    *out = m.release();
    return {};
  });
}
void posenc_mrope_plan_destroy(posenc_mrope_plan* plan) { delete plan; }
posenc_status posenc_mrope_plan_read_hf_vision(const char* path, posenc_mrope_plan** out, int64_t* head_dim) {
  constexpr const char* fn = "mrope_plan_read_hf_vision";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (path == nullptr) return pd::fail(fn, "path is null");
#if defined(POSENC_C_HAS_HF)
    posenc::vision_positional_plan v;
    POSENC_TRY(posenc::try_vision_plan_from_hf_file(path, v));
    auto m = std::make_unique<posenc_mrope_plan>();
    POSENC_TRY(v.try_make_rope(m->plan));
    if (head_dim != nullptr) *head_dim = v.head_dim;
    *out = m.release();
    return {};
#else
    (void)head_dim;
    return pd::fail(fn, "this libposenc was built without nlohmann/json (Hugging Face config.json support)");
#endif
  });
}
posenc_status posenc_vision_positions(int64_t frames, int64_t grid_h, int64_t grid_w, int64_t merge, int64_t* ids,
                                      int64_t count) {
  constexpr const char* fn = "vision_positions";
  return guarded(fn, [&]() -> status {
    std::vector<std::int64_t> v;
    POSENC_TRY(posenc::try_vision_positions(frames, grid_h, grid_w, merge, v));
    if (count != static_cast<int64_t>(v.size()))
      return pd::fail(fn, "count=", count, " must be 3 * frames * grid_h * grid_w = ", v.size());
    if (ids == nullptr) return pd::fail(fn, "ids is null");
    std::memcpy(ids, v.data(), v.size() * sizeof(std::int64_t));
    return {};
  });
}

posenc_status posenc_apply_mrope(const posenc_mrope_plan* plan, const posenc_tensor* x, const int64_t* ids,
                                 int64_t batch, int64_t length, int32_t inverse) {
  constexpr const char* fn = "apply_mrope";
  return guarded(fn, [&]() -> status {
    if (plan == nullptr) return pd::fail(fn, "plan is null");
    if (batch < -1) return pd::fail(fn, "batch=", batch, " must be >= 0, or -1 for ids shared by every sequence");
    if (ids == nullptr && length > 0) return pd::fail(fn, "ids is null");
    const auto p = batch == -1 ? posenc::mrope_positions::shared(ids, length)
                               : posenc::mrope_positions::per_token(ids, batch, length);
    return with_view<4, false>(fn, "x", x, nlhd, [&](auto v) {
      return inverse ? posenc::try_apply_mrope_backward(plan->plan, v, p) : posenc::try_apply_mrope(plan->plan, v, p);
    });
  });
}

void posenc_quant_spec_init(posenc_quant_spec* spec) {
  if (spec == nullptr) return;
  std::memset(spec, 0, sizeof *spec);
  spec->struct_size = sizeof(posenc_quant_spec);
  spec->format = POSENC_QUANT_INT8;
  spec->scale_stride = 1;
}

posenc_status posenc_apply_rope_quantized(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                          const posenc_tensor* in, const posenc_tensor* codes,
                                          const posenc_tensor* scales, const posenc_positions* pos,
                                          const posenc_quant_spec* spec) {
  constexpr const char* fn = "apply_rope_quantized";
  return guarded(fn, [&]() -> status {
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    posenc::quant_spec q;
    POSENC_TRY(quant_spec_of(fn, "spec", spec, q));
    posenc::strided_view<float, 3> sv;
    POSENC_TRY(scales_of(fn, "scales", scales, sv));
    std::array<index_t, 4> e{}, st{};
    POSENC_TRY(shape_of<4>(fn, "codes", codes, nlhd, e, st));
    return with_source(fn, plan, cache, [&](const auto& src) {
      return with_view<4, true>(fn, "in", in, nlhd, [&](auto x) {
        return with_code_type(fn, "codes", codes, [&](auto code_tag) {
          using Code = typename decltype(code_tag)::type;
          return posenc::try_apply_rope_quantized(src, x, view_as<Code, 4>(codes), sv, p, q);
        });
      });
    });
  });
}

posenc_status posenc_rope_append_kv_quantized(const posenc_rope_plan* plan, const posenc_rope_cache* cache,
                                              const posenc_tensor* k, const posenc_tensor* v,
                                              const posenc_tensor* k_cache, const posenc_tensor* v_cache,
                                              const posenc_positions* pos, const posenc_kv_slots* slots,
                                              const posenc_quant_spec* k_spec, const posenc_quant_spec* v_spec,
                                              const posenc_tensor* k_scales, const posenc_tensor* v_scales) {
  constexpr const char* fn = "rope_append_kv_quantized";
  return guarded(fn, [&]() -> status {
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    posenc::kv_slots ks;
    POSENC_TRY(kv_slots_of(fn, slots, ks));
    posenc::quant_spec kq, vq;
    POSENC_TRY(quant_spec_of(fn, "k_spec", k_spec, kq));
    POSENC_TRY(quant_spec_of(fn, "v_spec", v_spec, vq));
    posenc::strided_view<float, 3> kso, vso;
    POSENC_TRY(scales_of(fn, "k_scales", k_scales, kso));
    POSENC_TRY(scales_of(fn, "v_scales", v_scales, vso));
    POSENC_TRY(append_descriptors(fn, k, v, k_cache, v_cache));
    return with_source(fn, plan, cache, [&](const auto& src) {
      return with_dtype(fn, "k", k->dtype, [&](auto in_tag) {
        using I = typename decltype(in_tag)::type;
        return with_code_type(fn, "k_cache", k_cache, [&](auto kc_tag) {
          return with_code_type(fn, "v_cache", v_cache, [&](auto vc_tag) {
            using KC = typename decltype(kc_tag)::type;
            using VC = typename decltype(vc_tag)::type;
            return posenc::try_rope_append_kv_quantized(src, view_as<const I, 4>(k), view_as<const I, 4>(v),
                                                        view_as<KC, 4>(k_cache), view_as<VC, 4>(v_cache), p, ks, kq,
                                                        vq, kso, vso);
          });
        });
      });
    });
  });
}

posenc_status posenc_t5_bias_create(int64_t num_heads, int32_t bidirectional, int64_t num_buckets,
                                    int64_t max_distance, const posenc_tensor* table, posenc_t5_bias** out) {
  constexpr const char* fn = "t5_bias_create";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (table == nullptr) return pd::fail(fn, "table is null");
    const posenc::t5_bucket_config cfg{bidirectional != 0, num_buckets, max_distance};
    auto b = std::make_unique<posenc_t5_bias>();
    b->is_double = table->dtype == POSENC_F64;
    POSENC_TRY(b->visit([&](auto& r) -> status {
      const status created = std::decay_t<decltype(r)>::try_create(num_heads, cfg, r);
      return created.ok() ? copy_table(fn, table, r.table()) : created;
    }));
    *out = b.release();
    return {};
  });
}
void posenc_t5_bias_destroy(posenc_t5_bias* bias) { delete bias; }

posenc_status posenc_add_t5_bias(const posenc_t5_bias* bias, const posenc_tensor* scores,
                                 const posenc_positions* query_pos) {
  constexpr const char* fn = "add_t5_bias";
  return guarded(fn, [&]() -> status {
    if (bias == nullptr) return pd::fail(fn, "bias is null");
    posenc::positions p;
    POSENC_TRY(positions_of(fn, query_pos, p));
    return with_view<4, false>(fn, "scores", scores, "[N, H, Lq, Lk]", [&](auto v) {
      return bias->visit([&](const auto& r) { return posenc::try_add_t5_bias(r, v, p); });
    });
  });
}

posenc_status posenc_learned_create(int64_t max_positions, int64_t dim, double scale, int64_t position_offset,
                                    const posenc_tensor* table, posenc_learned** out) {
  constexpr const char* fn = "learned_create";
  return guarded(fn, [&]() -> status {
    if (out == nullptr) return pd::fail(fn, "out is null");
    if (table == nullptr) return pd::fail(fn, "table is null");
    posenc::learned_config cfg;
    cfg.max_positions = max_positions;
    cfg.dim = dim;
    cfg.scale = scale;
    cfg.position_offset = position_offset;
    auto m = std::make_unique<posenc_learned>();
    m->is_double = table->dtype == POSENC_F64;
    POSENC_TRY(m->visit([&](auto& e) -> status {
      const status created = std::decay_t<decltype(e)>::try_create(cfg, e);
      return created.ok() ? copy_table(fn, table, e.table()) : created;
    }));
    *out = m.release();
    return {};
  });
}
void posenc_learned_destroy(posenc_learned* learned) { delete learned; }

posenc_status posenc_add_learned(const posenc_learned* learned, const posenc_tensor* in, const posenc_tensor* out,
                                 const posenc_positions* pos) {
  constexpr const char* fn = "add_learned";
  return guarded(fn, [&]() -> status {
    if (learned == nullptr) return pd::fail(fn, "learned is null");
    posenc::positions p;
    POSENC_TRY(positions_of(fn, pos, p));
    constexpr const char* dims = "(N, L, D)";
    const auto run = [&](const auto& m) -> status {
      if (out == nullptr || out == in)
        return with_view<3, false>(fn, "x", in, dims, [&](auto x) { return m.try_forward(x, p); });
      std::array<index_t, 3> e{}, st{};
      POSENC_TRY(shape_of<3>(fn, "in", in, dims, e, st));
      POSENC_TRY(shape_of<3>(fn, "out", out, dims, e, st));
      POSENC_TRY(same_dtype(fn, "out", out, "in", in));
      return with_dtype(fn, "in", in->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return m.try_forward(view_as<const T, 3>(in), view_as<T, 3>(out), p);
      });
    };
    return learned->visit(run);
  });
}

}  // extern "C"
