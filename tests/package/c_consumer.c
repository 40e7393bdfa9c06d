/* A C99 program against the installed libposenc (pkg-config posenc-c, find_package(posenc COMPONENTS c)):
 * RoPE on one token through a plan, checked against the rotation computed here in double (RoFormer eq. 34). */
#include <math.h>
#include <posenc/c/posenc.h>
#include <stdio.h>

int main(void) {
  enum { D = 8 };
  double x[D] = {0.5, -0.25, 1.0, 0.75, -1.0, 0.125, 0.25, -0.5}, x0[D];
  const int64_t shape[4] = {1, 1, 1, D};
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_tensor t;
  posenc_positions pos;
  double worst = 0.0;
  int i;
  for (i = 0; i < D; ++i) x0[i] = x[i];
  posenc_rope_config_init(&cfg);
  cfg.head_dim = D;
  if (posenc_rope_plan_create(&cfg, 0, &plan) != POSENC_OK) return 1;
  t = posenc_tensor_contiguous(x, POSENC_F64, 4, shape);
  pos = posenc_positions_offset(7);
  if (posenc_apply_rope(plan, NULL, &t, NULL, &pos, 0) != POSENC_OK) return 2;
  for (i = 0; i < D / 2; ++i) {
    const double th = 7.0 * pow(10000.0, -2.0 * i / D);
    const double a = x0[i] * cos(th) - x0[i + D / 2] * sin(th), b = x0[i + D / 2] * cos(th) + x0[i] * sin(th);
    worst = fmax(worst, fmax(fabs(x[i] - a), fabs(x[i + D / 2] - b)));
  }
  posenc_rope_plan_destroy(plan);
  if (!(worst < 1e-14)) return 3;
  printf("c_consumer: ok (posenc %s, C API %d, %s)\n", posenc_version(), posenc_c_api_version(), posenc_active_isa());
  return 0;
}
