// Included by tu_default.cpp and tu_avx2.cpp with WORK_NAME set.
#include <cstdint>
#include <vector>

#include <posenc/posenc.hpp>

#include "tu.hpp"

std::vector<float> WORK_NAME() {
  using posenc::index_t;
  const index_t l = 7, h = 3, d = 72;
  std::vector<float> x(static_cast<std::size_t>(l * h * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((static_cast<int>(i * 37 % 101) - 50) / 50.0);
  posenc::rope_config cfg;
  cfg.head_dim = d;
  const auto plan = posenc::make_rope_plan(cfg);
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc::apply_rope(plan, v, posenc::positions::offset(123456));
  posenc::apply_rope(posenc::rope_cache<float>(plan, 64), v, posenc::positions::offset(3));
  posenc::xpos_config xc;
  xc.head_dim = d;
  posenc::apply_xpos(posenc::xpos_plan(xc), v, posenc::positions::offset(40), 42, posenc::xpos_mode::upscale);
  posenc::alibi_config ac;
  ac.num_heads = h;
  posenc::add_alibi_bias(ac, posenc::strided_view<float, 4>(x.data(), {1, h, l, d}), posenc::positions::offset(60));
  posenc::add_sinusoidal({d}, posenc::strided_view<float, 2>(x.data(), {l * h, d}), posenc::positions::offset(9));
  return x;
}
