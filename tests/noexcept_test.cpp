// The no-exceptions build: this program is compiled with -fno-exceptions and without Eigen on the include
// path (tests/CMakeLists.txt), and calls the try_ forms of the engine-facing API with good and bad input.
// Bad input must come back as a status with its message and leave the outputs untouched; if any try_ path
// reached a throwing function, the program would abort (detail::raise without exceptions) and the test fail.
// No GoogleTest: the distribution's libgtest is built with exceptions.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <posenc/alibi.hpp>
#include <posenc/binding.hpp>
#include <posenc/io/gguf.hpp>
#include <posenc/kv_cache.hpp>
#include <posenc/learned.hpp>
#include <posenc/mrope.hpp>
#include <posenc/quantize.hpp>
#include <posenc/t5_bias.hpp>
#include <posenc/rope.hpp>
#include <posenc/rope_ops.hpp>
#include <posenc/rope_params.hpp>
#include <posenc/sinusoidal.hpp>
#include <posenc/xpos.hpp>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "noexcept_test.cpp must be compiled with -fno-exceptions"
#endif
#ifdef EIGEN_WORLD_VERSION
#error "noexcept_test.cpp must build without Eigen"
#endif

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const char* what, int line) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAILED line %d: %s\n", line, what);
  }
}
#define CHECK(cond) check((cond), #cond, __LINE__)

/// A rejected call: invalid_argument, the message starting with `prefix`.
void rejected(const posenc::status& s, const char* prefix, int line) {
  check(!s.ok() && s.code() == posenc::errc::invalid_argument, "status is invalid_argument", line);
  check(s.message().rfind(prefix, 0) == 0, (std::string("message starts with: ") + prefix).c_str(), line);
  if (s.message().rfind(prefix, 0) != 0) std::printf("  got: %s\n", s.c_str());
}
#define REJECTED(expr, prefix) rejected((expr), (prefix), __LINE__)

using posenc::index_t;

}  // namespace

int main() {
  // RoPE: plan, cache, in place, out of place into 16-bit, q+k.
  posenc::rope_config cfg;
  cfg.head_dim = 16;
  posenc::rope_plan plan;
  CHECK(posenc::try_make_rope_plan(cfg, 0, plan).ok());
  posenc::rope_config bad = cfg;
  bad.rotary_dim = 18;
  posenc::rope_plan untouched;
  REJECTED(posenc::try_make_rope_plan(bad, 0, untouched), "posenc::make_rope_plan: rotary_dim=18 exceeds head_dim=16");
  CHECK(untouched.empty());
  posenc::rope_cache<float> cache;
  CHECK(posenc::rope_cache<float>::try_create(plan, 64, cache).ok());
  REJECTED(posenc::rope_cache<float>::try_create(plan, -1, cache), "posenc::rope_cache: max_positions=-1");
  CHECK(cache.max_positions() == 64);

  std::vector<float> x(2 * 3 * 2 * 16, 0.5f);
  const std::vector<float> x0 = x;
  posenc::strided_view<float, 4> xv(x.data(), {2, 3, 2, 16});
  CHECK(posenc::try_apply_rope(cache, xv, posenc::positions::offset(5)).ok());
  CHECK(x != x0);
  std::vector<float> y = x;
  REJECTED(posenc::try_apply_rope(cache, xv, posenc::positions::offset(62)), "posenc::apply_rope: position 64 is past the cache");
  REJECTED(posenc::try_apply_rope(plan, posenc::strided_view<float, 4>(x.data(), {2, 3, 2, 15}), posenc::positions::offset(0)),
           "posenc::apply_rope: x head dim (extent 3)=15");
  CHECK(x == y);
#if POSENC_HAS_FLOAT16
  std::vector<_Float16> f16(x.size());  // a built-in f16 storage type where the compiler has it
  CHECK(posenc::try_apply_rope(plan, posenc::strided_view<const float, 4>(x0.data(), {2, 3, 2, 16}),
                               posenc::strided_view<_Float16, 4>(f16.data(), {2, 3, 2, 16}), posenc::positions::offset(5))
            .ok());
  CHECK(std::fabs(static_cast<float>(f16[3]) - x[3]) < 1e-3f);
#endif

  // Table views.
  const posenc::rope_geometry g{16, 0, 0, posenc::rope_style::half_split};
  REJECTED(posenc::try_apply_rope(posenc::rope_table_view<float>::separate(nullptr, nullptr, 8, g), xv, posenc::positions::offset(0)),
           "posenc::apply_rope: table cos or sin is null");

  // Fused KV-cache append, and its quantised form.
  std::vector<float> kc(4 * 4 * 2 * 16, 9.0f), vc(kc.size(), 9.0f);
  posenc::strided_view<float, 4> kcv(kc.data(), {4, 4, 2, 16}), vcv(vc.data(), {4, 4, 2, 16});
  const std::vector<std::int64_t> slots = {0, 1, 2, 5, 6, -1};
  CHECK(posenc::try_rope_append_kv(plan, xv, xv, kcv, vcv, posenc::positions::offset(0), posenc::kv_slots::paged(slots.data(), 2, 3))
            .ok());
  CHECK(vc[0] == x[0] && kc[5 * 32] != 9.0f && kc[7 * 32] == 9.0f);
  const std::vector<std::int64_t> bad_slots = {0, 1, 2, 5, 6, 16};
  const std::vector<float> kc_before = kc;
  REJECTED(posenc::try_rope_append_kv(plan, xv, xv, kcv, vcv, posenc::positions::offset(0),
                                      posenc::kv_slots::paged(bad_slots.data(), 2, 3)),
           "posenc::rope_append_kv: slot_mapping[1, 2]=16 is outside");
  CHECK(kc == kc_before);
  // Bound calls (posenc/binding.hpp): the views checked once, each run's positions and slots.
  auto layer = posenc::try_bind_rope_append_kv(plan, xv, xv, kcv, vcv);
  CHECK(layer.ok());
  REJECTED(layer.try_run(posenc::positions::offset(0), posenc::kv_slots::paged(bad_slots.data(), 2, 3)),
           "posenc::rope_append_kv: slot_mapping[1, 2]=16 is outside");
  CHECK(kc == kc_before);
  REJECTED(posenc::try_bind_rope_append_kv(plan, xv, xv, kcv, kcv).bind_status(), "posenc::rope_append_kv: v_cache overlaps k_cache");
  const auto rot = posenc::try_bind_apply_rope(cache, xv);
  const std::vector<float> x_before = x;
  REJECTED(rot.try_run(posenc::positions::offset(62)), "posenc::apply_rope: position 64 is past the cache");
  CHECK(x == x_before);
  CHECK(rot.try_run(posenc::positions::offset(1)).ok() && x != x_before);
  std::vector<std::int8_t> codes(x.size(), 1);
  std::vector<float> scales(2 * 3 * 2);
  CHECK(posenc::try_apply_rope_quantized(plan, xv, posenc::strided_view<std::int8_t, 4>(codes.data(), {2, 3, 2, 16}),
                                         posenc::strided_view<float, 3>(scales.data(), {2, 3, 2}), posenc::positions::offset(0),
                                         posenc::quant_spec{})
            .ok());
  REJECTED(posenc::try_apply_rope_quantized(plan, xv, posenc::strided_view<std::int8_t, 4>(codes.data(), {2, 3, 2, 16}), {},
                                            posenc::positions::offset(0), posenc::quant_spec{posenc::quant_format::fp8_e4m3}),
           "posenc::apply_rope_quantized: codes: std::int8_t codes need quant_format::int8");

  // Sinusoidal and learned.
  posenc::sinusoidal_config sc;
  sc.dim = 7;
  std::vector<float> table(4 * 8, 3.0f);
  REJECTED(posenc::try_sinusoidal_table(sc, posenc::strided_view<float, 2>(table.data(), {4, 8})), "posenc::sinusoidal_table");
  CHECK(table[0] == 3.0f);
  sc.dim = 8;
  CHECK(posenc::try_sinusoidal_table(sc, posenc::strided_view<float, 2>(table.data(), {4, 8})).ok());
  posenc::learned_config lc;
  lc.max_positions = 0;
  lc.dim = 8;
  posenc::learned_position_embedding<float> emb;
  REJECTED(posenc::learned_position_embedding<float>::try_create(lc, emb), "posenc::learned_position_embedding");

  // xPos, MRoPE, the context shift.
  posenc::xpos_config xc;
  xc.head_dim = 15;
  posenc::xpos_plan xp;
  REJECTED(posenc::xpos_plan::try_create(xc, xp), "posenc::xpos_plan");
  xc.head_dim = 16;
  CHECK(posenc::xpos_plan::try_create(xc, xp).ok());
  CHECK(posenc::try_apply_xpos(xp, xv, posenc::positions::offset(0), 1, posenc::xpos_mode::upscale).ok());
  posenc::mrope_plan mp;
  REJECTED(posenc::mrope_plan::try_create(plan, {2, 2, 2}, posenc::mrope_layout::chunked, mp), "posenc::mrope_plan");
  y = x;
  REJECTED(posenc::try_shift_rope(plan, posenc::strided_view<float, 4>(x.data(), {2, 3, 2, 15}), 3), "posenc::shift_rope");
  CHECK(x == y);

  // ALiBi and the T5 bias added into scores.
  posenc::alibi_config ac;
  ac.num_heads = 2;
  std::vector<float> scores(1 * 2 * 3 * 5, 0.0f);
  const posenc::strided_view<float, 4> sv(scores.data(), {1, 2, 3, 5});
  CHECK(posenc::try_add_alibi_bias(ac, sv, posenc::positions::offset(2)).ok());
  ac.head_end = 3;
  std::vector<float> s_before = scores;
  REJECTED(posenc::try_add_alibi_bias(ac, sv, posenc::positions::offset(2)), "posenc::add_alibi_bias");
  CHECK(scores == s_before);
  posenc::t5_relative_bias<float> rel;
  CHECK(posenc::t5_relative_bias<float>::try_create(2, posenc::t5_bucket_config{}, rel).ok());
  CHECK(posenc::try_add_t5_bias(rel, sv, posenc::positions::offset(2)).ok());
  s_before = scores;
  REJECTED(posenc::try_add_t5_bias(rel, sv, posenc::positions::offset(-4)), "posenc::add_t5_bias");
  CHECK(scores == s_before);

  // Model metadata: the shared mapping, and a truncated GGUF buffer.
  posenc::rope_params params;
  params.head_dim = 128;
  params.base = 500000.0;
  posenc::rope_config from_params;
  CHECK(posenc::try_rope_config_from_params(params, from_params).ok() && from_params.head_dim == 128);
  const unsigned char truncated[] = {'G', 'G', 'U', 'F', 3, 0, 0};
  posenc::gguf_rope_info info;
  const posenc::status gs = posenc::try_parse_gguf_rope(truncated, sizeof truncated, info);
  CHECK(!gs.ok() && gs.code() == posenc::errc::invalid_file);

  std::printf("noexcept_test: %d checks, %d failed (built without exceptions: every rejection came back as a status)\n",
              checks, failures);
  return failures == 0 ? 0 : 1;
}
