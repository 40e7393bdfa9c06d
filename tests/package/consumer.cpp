// A consumer of posenc: rotates one vector and checks the rotation by hand (pair (1, 0) at position 1 with
// w_0 = 1 becomes (cos 1, sin 1)).
#include <cmath>
#include <cstdio>

#include <posenc/posenc.hpp>

int main() {
  posenc::rope_config cfg;
  cfg.head_dim = 2;
  float x[2] = {1.0f, 0.0f};
  posenc::apply_rope(posenc::make_rope_plan(cfg), posenc::strided_view<float, 4>(x, {1, 1, 1, 2}), posenc::positions::offset(1));
  const bool ok = std::fabs(x[0] - std::cos(1.0f)) < 1e-6f && std::fabs(x[1] - std::sin(1.0f)) < 1e-6f;
  std::printf("posenc %s consumer: %s\n", POSENC_VERSION_STRING, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
