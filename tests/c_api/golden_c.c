/* golden_c.c -- the C API (include/posenc/c/posenc.h) against the golden data of tests/golden (FORMAT.md).
 * C99, <posenc/c/posenc.h> and the C standard library only. Usage: golden_c <golden-dir>. Also reads a Hugging
 * Face config.json and a GGUF file from <golden-dir>/../data (model_checks): the facts they hold, exactly.
 *
 * Checks and tolerances (|got - expected| <= tolerance, per element):
 *  - RoPE, rope_basic.txt and rope_scaling.txt, every case: float64 in place and float32 out of place (float in,
 *    float out), each through a plan and through a cache (float64 cache for the float64 run, float32 cache for
 *    the float32 run). float64: 1e-12 * max(1, |y|); float32: 2e-6 * max(1, |y|) (the project's stated
 *    tolerances, tests/test_util.hpp). Both plus the angle bound FORMAT.md prescribes (angle_bound below):
 *    theta = p * w in double rounds w first, so y moves by up to 1.5 * (max position + 1) * 2^-52 * |pair| *
 *    magnitude (~1e-11 at p = 30000; without it the exact golden angle is not reachable in double), |pair| <=
 *    sqrt(2) for inputs in [-1, 1]. inv_freq relative 1e-12; magnitude and logit_scale relative 1e-14 (a few
 *    ulps of a closed-form double expression).
 *  - MRoPE, mrope.txt, every case: posenc_mrope_plan_create over a posenc_rope_plan of the case's head_dim,
 *    rotary_dim, base (half-split), posenc_apply_mrope float64 in place with the (3, L) shared ids (batch -1) or
 *    the (N, 3, L) per-token ids (batch N): 1e-12 * max(1, |y|) plus the angle bound at the case's largest
 *    position (each pair takes the position of one axis, so the bound of the largest id covers all). Then the
 *    inverse (transpose) on the result must give x back within twice that (two rotations). The C API has no
 *    sectioned-frequency plan (vision_2d, freq_mode sectioned: w_j = base^(-j/size) restarting per section), so
 *    that case's plan is the standard one with per-pair freq_factors f_i = w_std_i / w_golden_i, nudged by a few
 *    ulps until the plan's w_std_i / f_i (one double division, rope_plan.hpp) is the golden double; the plan's
 *    inv_freq is then checked against the golden inv_freq (relative 2^-52 for this case, 1e-12 for the others)
 *    and any remaining |w_plan - w_golden| * max position * |pair| is added to that case's tolerance.
 *  - Quantisation, quant.txt `kind fused` cases (the conversion and scaled cases have no C entry point of their
 *    own): posenc_apply_rope_quantized of x (float32 input; also float64 input) through the plan and through a
 *    float32 cache into POSENC_I8 codes with dynamic scales, POSENC_I8 codes with the per-head int8_scale,
 *    POSENC_U8 codes with e4m3_scale (FP8_E4M3) and e5m2_scale (FP8_E5M2). Against the golden codes: FORMAT.md
 *    allows a float32 rotation to differ from y by an ulp, moving a code by one step where y sits at a rounding
 *    boundary, so every code must be within one step (fp8 steps counted on the signed magnitude, -0 = +0) and
 *    the differing codes are counted per format over all fused runs: more than 1% fails. Dynamic scales
 *    against int8_dyn_scale: relative 2^-21 (exact 0 for an all-zero head). Against the kernel's own rotation
 *    (FORMAT.md: its codes equal the codes of its own y): posenc_apply_rope of the same input, source and
 *    positions into float32, quantised here by the rules of FORMAT.md / quantize.hpp (int8: sat(rint(y *
 *    (1.0f / scale))); fp8: nearest even of the OCP E4M3 / E5M2 values, saturating), codes and dynamic scales
 *    (absmax / 127.0f) exact.
 *  - rope_append_kv_quantized into paged int8 caches with dynamic scales: k codes and scales bit-exact against
 *    posenc_apply_rope_quantized of k, v codes and scales bit-exact against v quantised here (scale = absmax /
 *    127.0f per token and head, code = sat(rint(v * (1.0f / scale))), FORMAT.md's int8 rule); untouched slots
 *    keep their bytes, the inputs are not modified.
 *  - ALiBi: slopes relative 1e-15 (exact powers of two up to libm's exp2/pow); bias 1e-9 * max(1, |bias|)
 *    (|bias| reaches 25000 in bias_h4_far, so the bound is relative there); the same bias added into scores
 *    [1, H, Lq, Lk] of 0.5 (posenc_add_alibi_bias), and with the causal mask (linear form): -inf after the query.
 *    fp32_* cases (POSENC_ALIBI_FP32, f32 scores): the bias and the bias added to the case's scores bit for bit;
 *    f64 scores with it refused.
 *  - Sinusoidal, add cases and table cases (a table is x = 0 plus T[P0 + l]): 1e-12 * max(1, |y|) plus the
 *    FORMAT.md angle bound p * (2 + ln base) * 2^-53 (2.5e-10 at p = 100000). The C API has no padding_idx
 *    (posenc_add_sinusoidal adds T[p] for every p), so the rows at position padding_idx, which fairseq zeroes
 *    (fairseq_padded_add, concat_padding_table), are not compared; every other row of those cases is.
 *  - T5 buckets: exact, boundary_* and table_* cases. T5 bias, table_* cases: a [num_buckets, 3] table of
 *    distinct values 0.25 b + 16 h (float32 and float64 tables), posenc_add_t5_bias into scores [1, 3, Lq, Lk]
 *    of 1.0 with queries at query_offset + i: exactly 1.0 + table[buckets[i, j], h] (sums of exactly
 *    representable values).
 *  - Learned: posenc_learned_create (scale 0.5, position_offset 2, float64 table of dyadic values),
 *    posenc_add_learned out of place and in place with per-token positions: exactly x + 0.5 * table[p + 2].
 *  - Rerotate: head_dim 32, base 10000, from = no scaling, to = linear factor 4, positions 0, 1, 4097, 30000:
 *    posenc_rerotate_rope(from, to) of x rotated by `from` against x rotated by `to` (and back, to -> from),
 *    1e-12 * max(1, |y|) plus two angle bounds (the sides differ by the roundings of p * w_from, w_to - w_from,
 *    p * (w_to - w_from) and p * w_to, each <= 2^-53 p).
 *  - xPos: absolute 1e-12 * max(1, |y|) or relative 1e-12 * |y| per tolerance_mode, plus the angle bound
 *    1.5 * (P0 + L) * 2^-52 * |y pair| (tests/test_util.hpp expect_xpos_close; long_centre reaches p = 200007).
 *  - rope_append_kv into paged float32 caches: bit-exact against posenc_apply_rope (same source, float32).
 *  - Rejected calls (the older functions and the new ones: null handles, codes of POSENC_F32 dtype, fp8 without
 *    scales, wrong table shapes, sections not summing to R/2, batch < -1, plans of other geometry, positions
 *    past the learned table): non-OK status, a non-empty posenc_last_error, and the outputs unchanged (memcmp).
 * Every failure is printed with its case, index, got and expected; a missing or unreadable file is a failure.
 */
#include <posenc/c/posenc.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reporting ------------------------------------------------------------------------------------------- */

static long g_checks, g_failures;

static void failure(const char* fmt, ...) {
  va_list ap;
  ++g_failures;
  if (g_failures > 200) return; /* still counted */
  printf("FAIL ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

/* The largest error and error/tolerance per label, printed at the end (how close each family comes). */
#define MAX_LABELS 40
static struct { const char* label; double err, ratio; } g_max[MAX_LABELS];
static void note_err(const char* label, double err, double tol) {
  int i;
  for (i = 0; i < MAX_LABELS && g_max[i].label != NULL; ++i)
    if (strcmp(g_max[i].label, label) == 0) break;
  if (i == MAX_LABELS) return;
  g_max[i].label = label;
  if (err > g_max[i].err) g_max[i].err = err;
  if (tol > 0 && err / tol > g_max[i].ratio) g_max[i].ratio = err / tol;
}

static void check_close(const char* cname, const char* what, long idx, double got, double want, double tol) {
  const double err = fabs(got - want);
  ++g_checks;
  note_err(what, err, tol);
  if (!(err <= tol)) failure("%s %s [%ld]: got %.17g expected %.17g (|err| %.3g > tol %.3g)", cname, what, idx, got, want, err, tol);
}

static void check_status(const char* cname, const char* what, posenc_status s) {
  char msg[512];
  ++g_checks;
  if (s == POSENC_OK) return;
  posenc_last_error(msg, sizeof msg);
  failure("%s %s: status %s: %s", cname, what, posenc_status_name(s), msg);
}

static double dmax(double a, double b) { return a > b ? a : b; }

/* FORMAT.md: theta = p * w in double rounds w first, so the angle is off by up to 1.5 (p + 1) 2^-52 rad for
 * positions p <= max_pos (w <= 1), which moves y by that * |pair| * magnitude. */
static double angle_bound(int64_t max_pos, double pair, double magnitude) {
  return 1.5 * ldexp((double)max_pos + 1.0, -52) * pair * fabs(magnitude);
}

/* ---- the golden file reader ------------------------------------------------------------------------------ */

typedef struct {
  const char* key;
  int is_i64, rank;
  long dims[4], n;
  double* f;   /* values as double (also for i64 arrays) */
  int64_t* i;  /* i64 arrays only */
} garray;

#define MAX_PARAMS 40
#define MAX_ARRAYS 12
typedef struct {
  const char* name;
  int np, na;
  const char* pkey[MAX_PARAMS];
  const char* pval[MAX_PARAMS];
  garray a[MAX_ARRAYS];
} gcase;

typedef struct {
  char* text; /* the file, comments blanked; keys, names and values point into it */
  gcase* cases;
  int n;
} gfile;

static char* next_token(char** p) {
  char* s = *p;
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') ++s;
  if (*s == '\0') return NULL;
  *p = s;
  while (**p != '\0' && **p != ' ' && **p != '\t' && **p != '\n' && **p != '\r') ++*p;
  if (**p != '\0') *(*p)++ = '\0';
  return s;
}

static void free_gfile(gfile* g) {
  int c, a;
  for (c = 0; c < g->n; ++c)
    for (a = 0; a < g->cases[c].na; ++a) free(g->cases[c].a[a].f), free(g->cases[c].a[a].i);
  free(g->cases);
  free(g->text);
  memset(g, 0, sizeof *g);
}

/* Reads dir/name; 0 on success. A parse error names the token. */
static int load_gfile(const char* dir, const char* name, gfile* g) {
  char path[1024], *p, *t, *end;
  FILE* f;
  long size, k;
  gcase* cur = NULL;
  memset(g, 0, sizeof *g);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if ((f = fopen(path, "rb")) == NULL) return failure("%s: cannot open", path), -1;
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
      (g->text = (char*)malloc((size_t)size + 1)) == NULL || fread(g->text, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    free(g->text);
    g->text = NULL;
    return failure("%s: cannot read", path), -1;
  }
  fclose(f);
  g->text[size] = '\0';
  for (p = g->text; *p; ++p)
    if (*p == '#')
      while (*p && *p != '\n') *p++ = ' ';
  p = g->text;
  while ((t = next_token(&p)) != NULL) {
    if (strcmp(t, "case") == 0 && cur == NULL) {
      gcase* grown = (gcase*)realloc(g->cases, (size_t)(g->n + 1) * sizeof *grown);
      if (grown == NULL) goto bad;
      g->cases = grown;
      cur = &g->cases[g->n++];
      memset(cur, 0, sizeof *cur);
      if ((cur->name = next_token(&p)) == NULL) goto bad;
    } else if (strcmp(t, "param") == 0 && cur != NULL && cur->np < MAX_PARAMS) {
      cur->pkey[cur->np] = next_token(&p);
      cur->pval[cur->np] = next_token(&p);
      if (cur->pval[cur->np++] == NULL) goto bad;
    } else if (strcmp(t, "array") == 0 && cur != NULL && cur->na < MAX_ARRAYS) {
      garray* a = &cur->a[cur->na++];
      const char* type;
      a->key = next_token(&p);
      type = next_token(&p);
      if (type == NULL || (t = next_token(&p)) == NULL) goto bad;
      a->is_i64 = strcmp(type, "i64") == 0;
      a->rank = (int)strtol(t, &end, 10);
      if ((!a->is_i64 && strcmp(type, "f64") != 0) || *end || a->rank < 1 || a->rank > 4) goto bad;
      for (a->n = 1, k = 0; k < a->rank; ++k) {
        if ((t = next_token(&p)) == NULL) goto bad;
        a->dims[k] = strtol(t, &end, 10);
        if (*end || a->dims[k] < 0) goto bad;
        a->n *= a->dims[k];
      }
      a->f = (double*)calloc((size_t)a->n + 1, sizeof(double));
      if (a->is_i64) a->i = (int64_t*)calloc((size_t)a->n + 1, sizeof(int64_t));
      if (a->f == NULL || (a->is_i64 && a->i == NULL)) goto bad;
      for (k = 0; k < a->n; ++k) {
        if ((t = next_token(&p)) == NULL) goto bad;
        if (a->is_i64) {
          a->i[k] = (int64_t)strtoll(t, &end, 10);
          a->f[k] = (double)a->i[k];
        } else {
          a->f[k] = strtod(t, &end);
        }
        if (*end) goto bad;
      }
    } else if (strcmp(t, "end") == 0 && cur != NULL) {
      cur = NULL;
    } else {
      goto bad;
    }
  }
  if (cur == NULL) return 0;
  t = "(end of file inside a case)";
bad:
  failure("%s: parse error at \"%s\"", path, t ? t : "(end of file)");
  free_gfile(g);
  return -1;
}

static const char* pstr(const gcase* c, const char* key) {
  int k;
  for (k = 0; k < c->np; ++k)
    if (strcmp(c->pkey[k], key) == 0) return c->pval[k];
  return NULL;
}
static int has(const gcase* c, const char* key) { return pstr(c, key) != NULL; }
static const char* need_str(const gcase* c, const char* key) {
  const char* v = pstr(c, key);
  if (v == NULL) failure("%s: missing param %s", c->name, key);
  return v ? v : "";
}
static double pnum(const gcase* c, const char* key) { return strtod(need_str(c, key), NULL); }
static int64_t pint(const gcase* c, const char* key) { return (int64_t)strtoll(need_str(c, key), NULL, 10); }
static int is(const gcase* c, const char* key, const char* value) { return strcmp(need_str(c, key), value) == 0; }
static int starts(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static const garray* opt_arr(const gcase* c, const char* key) {
  int k;
  for (k = 0; k < c->na; ++k)
    if (strcmp(c->a[k].key, key) == 0) return &c->a[k];
  return NULL;
}
static const garray* arr(const gcase* c, const char* key) {
  const garray* a = opt_arr(c, key);
  if (a == NULL) failure("%s: missing array %s", c->name, key);
  return a;
}

static int64_t max_of(const garray* a) {
  int64_t m = 0;
  long k;
  for (k = 0; k < a->n; ++k) m = a->i[k] > m ? a->i[k] : m;
  return m;
}

/* ---- RoPE -------------------------------------------------------------------------------------------------- */

static int rope_config_of(const gcase* c, posenc_rope_config* cfg) {
  const char* s = need_str(c, "scaling");
  const garray* a;
  posenc_rope_config_init(cfg);
  cfg->style = is(c, "style", "interleaved") ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALF_SPLIT;
  cfg->head_dim = pint(c, "head_dim");
  cfg->rotary_dim = pint(c, "rotary_dim");
  cfg->rotary_offset = pint(c, "rotary_offset");
  cfg->base = pnum(c, "base");
  if (has(c, "factor")) cfg->factor = pnum(c, "factor");
  if (has(c, "original_max_positions")) cfg->original_max_positions = pint(c, "original_max_positions");
  if (has(c, "beta_fast")) cfg->beta_fast = pnum(c, "beta_fast");
  if (has(c, "beta_slow")) cfg->beta_slow = pnum(c, "beta_slow");
  if (has(c, "truncate")) cfg->truncate = (int32_t)pint(c, "truncate");
  if (has(c, "mscale")) cfg->mscale = pnum(c, "mscale");
  if (has(c, "mscale_all_dim")) cfg->mscale_all_dim = pnum(c, "mscale_all_dim");
  if (has(c, "attention_factor")) cfg->attention_factor = pnum(c, "attention_factor");
  if (has(c, "low_freq_factor")) cfg->low_freq_factor = pnum(c, "low_freq_factor");
  if (has(c, "high_freq_factor")) cfg->high_freq_factor = pnum(c, "high_freq_factor");
  if (has(c, "policy")) {
    if (is(c, "policy", "hf")) cfg->policy = POSENC_POLICY_PER_LENGTH;
    else if (is(c, "policy", "fixed_max")) cfg->policy = POSENC_POLICY_FIXED_AT_MAX;
    else return failure("%s: unknown policy %s", c->name, pstr(c, "policy")), -1;
  }
  if (strcmp(s, "none") == 0) cfg->scaling = POSENC_SCALING_NONE;
  else if (strcmp(s, "linear") == 0) cfg->scaling = POSENC_SCALING_LINEAR;
  else if (strcmp(s, "ntk") == 0) cfg->scaling = POSENC_SCALING_NTK, cfg->factor = pnum(c, "base_rescale_factor");
  else if (strcmp(s, "dynamic_ntk") == 0) cfg->scaling = POSENC_SCALING_DYNAMIC_NTK;
  else if (strcmp(s, "yarn") == 0) cfg->scaling = POSENC_SCALING_YARN;
  else if (strcmp(s, "deepseek_yarn") == 0) cfg->scaling = POSENC_SCALING_DEEPSEEK_YARN;
  else if (strcmp(s, "llama3") == 0) cfg->scaling = POSENC_SCALING_LLAMA3;
  else if (strcmp(s, "longrope") == 0) {
    const garray* sf = arr(c, "short_factor");
    const garray* lf = arr(c, "long_factor");
    if (sf == NULL || lf == NULL) return -1;
    cfg->scaling = POSENC_SCALING_LONGROPE;
    cfg->short_factor = sf->f, cfg->long_factor = lf->f, cfg->longrope_factor_count = sf->n;
  } else if (strcmp(s, "freq_factors") == 0) {
    if ((a = arr(c, "freq_factors")) == NULL) return -1;
    cfg->freq_factors = a->f, cfg->freq_factor_count = a->n;
  } else {
    return failure("%s: scaling %s is not handled by this test", c->name, s), -1;
  }
  return 0;
}

/* One run of a RoPE case: float64 in place or float32 out of place, through plan or cache. */
static void rope_run(const gcase* c, const posenc_rope_plan* plan, const posenc_rope_cache* cache, int f64,
                     const posenc_positions* pos, double angle_tol, const char* what) {
  const garray *x = arr(c, "x"), *y = arr(c, "y");
  const int inverse = is(c, "direction", "inverse");
  posenc_tensor tin, tout;
  long k;
  void *in, *out = NULL;
  if (x == NULL || y == NULL) return;
  in = malloc((size_t)x->n * sizeof(double) + 1);
  out = calloc((size_t)x->n + 1, sizeof(float));
  if (in == NULL || out == NULL) goto done;
  for (k = 0; k < x->n; ++k) {
    if (f64) ((double*)in)[k] = x->f[k];
    else ((float*)in)[k] = (float)x->f[k];
  }
  tin = posenc_tensor_contiguous(in, f64 ? POSENC_F64 : POSENC_F32, 4, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2], x->dims[3]});
  tout = tin;
  tout.data = out;
  check_status(c->name, what, posenc_apply_rope(plan, cache, &tin, f64 ? NULL : &tout, pos, inverse));
  for (k = 0; k < x->n; ++k) {
    const double want = y->f[k];
    if (f64) check_close(c->name, what, k, ((double*)in)[k], want, 1e-12 * dmax(1.0, fabs(want)) + angle_tol);
    else check_close(c->name, what, k, ((float*)out)[k], want, 2e-6 * dmax(1.0, fabs(want)) + angle_tol);
  }
  for (k = 0; !f64 && k < x->n; ++k)
    if (((float*)in)[k] != (float)x->f[k]) k = x->n, failure("%s %s: input modified", c->name, what);
done:
  free(in);
  free(out);
}

static void rope_case(const gcase* c) {
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_rope_cache *c64 = NULL, *c32 = NULL;
  posenc_positions pos;
  const garray *w = arr(c, "inv_freq"), *positions = arr(c, "positions"), *x = arr(c, "x");
  const char* form = need_str(c, "pos_form");
  double freq[512], m, angle_tol;
  long k;
  if (w == NULL || positions == NULL || x == NULL || x->rank != 4 || w->n > 512 || rope_config_of(c, &cfg) != 0) {
    failure("%s: case not runnable", c->name);
    return;
  }
  check_status(c->name, "plan_create", posenc_rope_plan_create(&cfg, pint(c, "seq_len"), &plan));
  if (plan == NULL) return;
  check_status(c->name, "inv_freq", posenc_rope_plan_inv_freq(plan, freq, w->n));
  for (k = 0; k < w->n; ++k) check_close(c->name, "inv_freq (rel)", k, freq[k], w->f[k], 1e-12 * fabs(w->f[k]));
  m = pnum(c, "magnitude");
  check_close(c->name, "magnitude", 0, posenc_rope_plan_magnitude(plan), m, 1e-14 * fabs(m));
  check_close(c->name, "logit_scale", 0, posenc_rope_plan_logit_scale(plan), pnum(c, "logit_scale"), 1e-14 * pnum(c, "logit_scale"));
  if (strcmp(form, "offset") == 0) {
    pos = posenc_positions_offset(pint(c, "offset"));
  } else if (strcmp(form, "per_sequence") == 0) {
    const garray* so = arr(c, "seq_offsets");
    if (so == NULL) goto done;
    pos = posenc_positions_per_sequence(so->i, POSENC_I64, so->n);
  } else {
    pos = posenc_positions_per_token(positions->i, POSENC_I64, positions->dims[0], positions->dims[1], -1);
  }
  angle_tol = angle_bound(max_of(positions), sqrt(2.0), m); /* |pair| <= sqrt(2): inputs in [-1, 1] */
  check_status(c->name, "cache_create f64", posenc_rope_cache_create(plan, max_of(positions) + 1, POSENC_F64, &c64));
  check_status(c->name, "cache_create f32", posenc_rope_cache_create(plan, max_of(positions) + 1, POSENC_F32, &c32));
  rope_run(c, plan, NULL, 1, &pos, angle_tol, "rope f64 plan in place");
  rope_run(c, plan, NULL, 0, &pos, angle_tol, "rope f32 plan out of place");
  if (c64) rope_run(c, NULL, c64, 1, &pos, angle_tol, "rope f64 cache<f64> in place");
  if (c32) rope_run(c, NULL, c32, 0, &pos, angle_tol, "rope f32 cache<f32> out of place");
done:
  posenc_rope_cache_destroy(c64);
  posenc_rope_cache_destroy(c32);
  posenc_rope_plan_destroy(plan);
}

/* ---- MRoPE --------------------------------------------------------------------------------------------------- */

/* The vision_2d plan (freq_mode sectioned): the standard plan's frequencies divided by freq_factors chosen so
 * that the plan's w_std / f (one double division) lands on the golden w; factors[] receives them. 0 on success. */
static int sectioned_factors(const gcase* c, posenc_rope_config* cfg, const garray* w, double* factors) {
  posenc_rope_plan* std_plan = NULL;
  double w_std[512];
  long i;
  int k;
  check_status(c->name, "standard plan_create", posenc_rope_plan_create(cfg, 0, &std_plan));
  if (std_plan == NULL) return -1;
  check_status(c->name, "standard inv_freq", posenc_rope_plan_inv_freq(std_plan, w_std, w->n));
  posenc_rope_plan_destroy(std_plan);
  for (i = 0; i < w->n; ++i) {
    double best = w_std[i] / w->f[i], f = best;
    for (k = 0; k < 8; ++k) f = nextafter(f, 0.0); /* the 17 factors within 8 ulps of the quotient */
    for (k = 0; k <= 16; ++k, f = nextafter(f, HUGE_VAL))
      if (fabs(w_std[i] / f - w->f[i]) < fabs(w_std[i] / best - w->f[i])) best = f;
    factors[i] = best;
  }
  cfg->freq_factors = factors, cfg->freq_factor_count = w->n;
  return 0;
}

static void mrope_case(const gcase* c) {
  const garray *w = arr(c, "inv_freq"), *ids = arr(c, "positions"), *x = arr(c, "x"), *y = arr(c, "y");
  const int sectioned = is(c, "freq_mode", "sectioned"), shared = is(c, "pos_form", "shared");
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_mrope_plan* mplan = NULL;
  posenc_tensor t;
  int64_t sections[3] = {0, 0, 0}, pmax, batch, length;
  double freq[512], factors[512], dw = 0.0, tol_angle, *buf = NULL;
  const char* s = need_str(c, "sections");
  char* end;
  long k;
  int a;
  if (w == NULL || ids == NULL || x == NULL || y == NULL || x->rank != 4 || w->n > 512) {
    failure("%s: case not runnable", c->name);
    return;
  }
  for (a = 0; a < 3; ++a, s = end + (*end == ',')) sections[a] = (int64_t)strtoll(s, &end, 10);
  posenc_rope_config_init(&cfg);
  cfg.style = is(c, "style", "interleaved") ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALF_SPLIT;
  cfg.head_dim = pint(c, "head_dim");
  cfg.rotary_dim = pint(c, "rotary_dim");
  cfg.base = pnum(c, "base");
  if (sectioned && sectioned_factors(c, &cfg, w, factors) != 0) return;
  check_status(c->name, "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  if (plan == NULL) return;
  check_status(c->name, "inv_freq", posenc_rope_plan_inv_freq(plan, freq, w->n));
  for (k = 0; k < w->n; ++k) {
    check_close(c->name, "mrope inv_freq (rel)", k, freq[k], w->f[k], (sectioned ? ldexp(1.0, -52) : 1e-12) * fabs(w->f[k]));
    dw = dmax(dw, fabs(freq[k] - w->f[k]));
  }
  check_status(c->name, "mrope_plan_create", posenc_mrope_plan_create(plan, sections, is(c, "mrope_layout", "interleaved"), &mplan));
  if (mplan == NULL || (buf = (double*)malloc((size_t)x->n * sizeof(double) + 1)) == NULL) goto done;
  pmax = max_of(ids);
  /* (3, L) ids shared by every sequence (batch -1), or (N, 3, L) (batch N) */
  batch = shared ? -1 : ids->dims[0];
  length = shared ? ids->dims[1] : ids->dims[2];
  tol_angle = angle_bound(pmax, sqrt(2.0), 1.0) + (sectioned ? (double)pmax * dw * sqrt(2.0) : 0.0);
  memcpy(buf, x->f, (size_t)x->n * sizeof(double));
  t = posenc_tensor_contiguous(buf, POSENC_F64, 4, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2], x->dims[3]});
  check_status(c->name, "apply_mrope", posenc_apply_mrope(mplan, &t, ids->i, batch, length, 0));
  for (k = 0; k < x->n; ++k) check_close(c->name, "mrope f64 in place", k, buf[k], y->f[k], 1e-12 * dmax(1.0, fabs(y->f[k])) + tol_angle);
  check_status(c->name, "apply_mrope inverse", posenc_apply_mrope(mplan, &t, ids->i, batch, length, 1));
  for (k = 0; k < x->n; ++k)
    check_close(c->name, "mrope f64 inverse of y", k, buf[k], x->f[k], 2.0 * (1e-12 * dmax(1.0, fabs(x->f[k])) + tol_angle));
done:
  free(buf);
  posenc_mrope_plan_destroy(mplan);
  posenc_rope_plan_destroy(plan);
}

/* ---- model layers (models.txt) and vision towers (vision.txt) ---------------------------------------------- */

static const char* g_golden_dir = ".";

/* Every layer of a config.json or GGUF model against models.txt: rope, attention, window, the factor on q at
 * the listed positions (1e-15 relative), and each RoPE layer's plan for 8192 positions (frequencies 4e-15
 * relative, magnitude, rotary dim, pair style); a NoPE layer's plan is refused. */
static void model_layers_case(const gcase* c) {
  const garray *rope = arr(c, "rope"), *att = arr(c, "attention"), *win = arr(c, "window"), *plan_of = arr(c, "plan");
  const garray *inv = arr(c, "plan_inv_freq"), *tpos = arr(c, "temp_positions"), *tscale = arr(c, "temp_scale");
  const garray *rdim = arr(c, "plan_rotary_dim"), *inter = arr(c, "plan_interleaved"), *mag = arr(c, "plan_magnitude");
  const int gguf = has(c, "gguf");
  char path[1024];
  posenc_model_layers* m = NULL;
  int64_t i, layers = pint(c, "layers");
  long k;
  if (!rope || !att || !win || !plan_of || !inv || !tpos || !tscale || !rdim || !inter || !mag) return;
  if (gguf) snprintf(path, sizeof path, "%s/../data/gguf/%s", g_golden_dir, need_str(c, "gguf"));
  else snprintf(path, sizeof path, "%s/../data/hf/models/%s", g_golden_dir, need_str(c, "config"));
  check_status(c->name, gguf ? "model_layers_read_gguf" : "model_layers_read_hf",
               gguf ? posenc_model_layers_read_gguf(path, &m) : posenc_model_layers_read_hf(path, &m));
  if (m == NULL) return;
  check_close(c->name, "layers", 0, (double)posenc_model_layers_count(m), (double)layers, 0);
  for (i = 0; i < layers && i < posenc_model_layers_count(m); ++i) {
    posenc_layer_info info;
    posenc_rope_plan* plan = NULL;
    double w[512];
    const int64_t p = plan_of->i[i];
    posenc_layer_info_init(&info);
    check_status(c->name, "model_layers_layer", posenc_model_layers_layer(m, i, &info));
    check_close(c->name, "rope", (long)i, info.rope, (double)rope->i[i], 0);
    check_close(c->name, "attention", (long)i, info.attention, (double)att->i[i], 0);
    check_close(c->name, "window", (long)i, (double)info.window, (double)win->i[i], 0);
    for (k = 0; k < tpos->n; ++k) {
      double f = 0.0;
      const double want = tscale->f[i * tpos->n + k];
      check_status(c->name, "model_layers_temperature", posenc_model_layers_temperature(m, i, tpos->i[k], &f));
      check_close(c->name, "temperature", (long)(i * tpos->n + k), f, want, 1e-15 * want);
    }
    if (p < 0) {
      if (posenc_model_layers_plan(m, i, 8192, &plan) != POSENC_INVALID_ARGUMENT)
        failure("%s: layer %ld is NoPE but model_layers_plan did not refuse it", c->name, (long)i);
      posenc_rope_plan_destroy(plan);
      continue;
    }
    check_status(c->name, "model_layers_plan", posenc_model_layers_plan(m, i, 8192, &plan));
    if (plan == NULL) continue;
    check_close(c->name, "rotary_dim", (long)i, (double)posenc_rope_plan_rotary_dim(plan), (double)rdim->i[p], 0);
    check_close(c->name, "interleaved", (long)i, posenc_rope_plan_style(plan) == POSENC_ROPE_INTERLEAVED,
                (double)inter->i[p], 0);
    check_close(c->name, "magnitude", (long)i, posenc_rope_plan_magnitude(plan), mag->f[p], 1e-15 * mag->f[p]);
    if (rdim->i[p] / 2 <= 512 && posenc_rope_plan_inv_freq(plan, w, rdim->i[p] / 2) == POSENC_OK)
      for (k = 0; k < rdim->i[p] / 2; ++k) {
        const double want = inv->f[p * inv->dims[1] + k];
        check_close(c->name, "layer inv_freq (rel)", k, w[k], want, 4e-15 * want);
      }
    posenc_rope_plan_destroy(plan);
  }
  posenc_model_layers_destroy(m);
}

/* A vision tower's 2D RoPE from its config.json against vision.txt: the token order of a sample grid (exact)
 * and HF's rotation of one head at each sample (row, column) in float64 (1e-12). */
static void vision_case(const gcase* c) {
  const garray *x = arr(c, "x"), *rp = arr(c, "rot_pos"), *want = arr(c, "rotated"), *grid = arr(c, "grid");
  const garray* pos = arr(c, "positions");
  char path[1024];
  posenc_mrope_plan* plan = NULL;
  posenc_tensor t;
  int64_t d = 0, kk, n, *ids = NULL;
  double* buf = NULL;
  long k;
  if (!x || !rp || !want || !grid || !pos) return;
  snprintf(path, sizeof path, "%s/../data/hf/models/%s", g_golden_dir, need_str(c, "config"));
  check_status(c->name, "mrope_plan_read_hf_vision", posenc_mrope_plan_read_hf_vision(path, &plan, &d));
  if (plan == NULL) return;
  check_close(c->name, "head_dim", 0, (double)d, (double)x->n, 0);
  n = pos->n;
  ids = (int64_t*)malloc((size_t)n * sizeof(int64_t) + 1);
  buf = (double*)malloc((size_t)want->n * sizeof(double) + 1);
  if (ids == NULL || buf == NULL) goto done;
  check_status(c->name, "vision_positions",
               posenc_vision_positions(grid->i[0], grid->i[1], grid->i[2], pint(c, "merge"), ids, n));
  for (k = 0; k < n; ++k) check_close(c->name, "vision position", k, (double)ids[k], (double)pos->i[k], 0);
  kk = rp->dims[0];
  for (k = 0; k < want->n; ++k) buf[k] = x->f[k % x->n];
  for (k = 0; k < 3 * kk; ++k) ids[k] = 0;
  for (k = 0; k < kk; ++k) {
    ids[kk + k] = rp->i[2 * k];
    ids[2 * kk + k] = rp->i[2 * k + 1];
  }
  t = posenc_tensor_contiguous(buf, POSENC_F64, 4, (const int64_t[]){1, kk, 1, d});
  check_status(c->name, "apply_mrope (vision)", posenc_apply_mrope(plan, &t, ids, -1, kk, 0));
  for (k = 0; k < want->n; ++k) check_close(c->name, "vision rotation f64", k, buf[k], want->f[k], 1e-12);
done:
  free(ids);
  free(buf);
  posenc_mrope_plan_destroy(plan);
}

/* ---- ALiBi, sinusoidal, T5, xPos ---------------------------------------------------------------------------- */

static void alibi_case(const gcase* c) {
  posenc_alibi_config cfg;
  const int slopes = starts(c->name, "slopes_");
  const garray* want = arr(c, slopes ? "slopes" : "bias");
  double* got;
  posenc_tensor t;
  posenc_positions qpos;
  long k;
  if (want == NULL || (got = (double*)calloc((size_t)want->n + 1, sizeof(double))) == NULL) return;
  posenc_alibi_config_init(&cfg);
  cfg.num_heads = pint(c, "num_heads");
  cfg.max_bias = pnum(c, "max_bias");
  if (slopes) {
    t = posenc_tensor_contiguous(got, POSENC_F64, 1, (const int64_t[]){want->dims[0]});
    check_status(c->name, "alibi_slopes", posenc_alibi_slopes(&cfg, &t));
    for (k = 0; k < want->n; ++k) check_close(c->name, "alibi slopes (rel)", k, got[k], want->f[k], 1e-15 * fabs(want->f[k]));
  } else {
    cfg.head_begin = pint(c, "head_begin");
    cfg.head_end = pint(c, "head_end");
    cfg.form = is(c, "form", "symmetric") ? POSENC_ALIBI_SYMMETRIC : POSENC_ALIBI_LINEAR;
    qpos = posenc_positions_offset(pint(c, "query_offset"));
    t = posenc_tensor_contiguous(got, POSENC_F64, 3, (const int64_t[]){want->dims[0], want->dims[1], want->dims[2]});
    check_status(c->name, "alibi_bias", posenc_alibi_bias(&cfg, &t, &qpos, 0));
    for (k = 0; k < want->n; ++k) check_close(c->name, "alibi bias", k, got[k], want->f[k], 1e-9 * dmax(1.0, fabs(want->f[k])));
    /* The add form into scores [1, H, Lq, Lk] prefilled with 0.5: 0.5 + bias; causal (linear form): keys after the
     * query (j > i + P0) become -inf, the others 0.5 + bias. */
    {
      const int64_t lq = want->dims[1], lk = want->dims[2], p0 = pint(c, "query_offset");
      int causal;
      t = posenc_tensor_contiguous(got, POSENC_F64, 4, (const int64_t[]){1, want->dims[0], lq, lk});
      for (causal = 0; causal <= (cfg.form == POSENC_ALIBI_LINEAR); ++causal) {
        for (k = 0; k < want->n; ++k) got[k] = 0.5;
        check_status(c->name, "add_alibi_bias", posenc_add_alibi_bias(&cfg, &t, &qpos, causal));
        for (k = 0; k < want->n; ++k) {
          const int64_t i = (k / lk) % lq, j = k % lk;
          if (causal && j > i + p0)
            check_close(c->name, "add_alibi_bias causal mask", k, isinf(got[k]) && got[k] < 0 ? 0.0 : 1.0, 0.0, 0.0);
          else
            check_close(c->name, "add_alibi_bias", k, got[k], 0.5 + want->f[k], 1e-9 * dmax(1.0, fabs(want->f[k])));
        }
      }
    }
  }
  free(got);
}

/* fp32_* cases (POSENC_ALIBI_FP32): f32 scores x -> y and the bias written, each value one float rounding, so
 * bit for bit; f64 scores with the fp32 arithmetic are refused (status, nothing written). */
static void alibi_fp32_case(const gcase* c) {
  posenc_alibi_config cfg;
  const garray *x = arr(c, "x"), *y = arr(c, "y"), *bias = arr(c, "bias");
  float* got;
  double refused = 1.25;
  posenc_tensor t;
  posenc_positions qpos;
  long k;
  int add;
  if (x == NULL || y == NULL || bias == NULL || (got = (float*)calloc((size_t)x->n + 1, sizeof(float))) == NULL) return;
  posenc_alibi_config_init(&cfg);
  cfg.num_heads = pint(c, "num_heads");
  cfg.max_bias = pnum(c, "max_bias");
  cfg.head_begin = pint(c, "head_begin");
  cfg.head_end = pint(c, "head_end");
  cfg.form = is(c, "form", "symmetric") ? POSENC_ALIBI_SYMMETRIC : POSENC_ALIBI_LINEAR;
  cfg.arithmetic = POSENC_ALIBI_FP32;
  qpos = posenc_positions_offset(pint(c, "query_offset"));
  for (add = 0; add <= 1; ++add) {
    const garray* want = add ? y : bias;
    for (k = 0; k < x->n; ++k) got[k] = add ? (float)x->f[k] : 0.0f;
    if (add) {
      t = posenc_tensor_contiguous(got, POSENC_F32, 4, (const int64_t[]){1, x->dims[0], x->dims[1], x->dims[2]});
      check_status(c->name, "add_alibi_bias fp32", posenc_add_alibi_bias(&cfg, &t, &qpos, 0));
    } else {
      t = posenc_tensor_contiguous(got, POSENC_F32, 3, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2]});
      check_status(c->name, "alibi_bias fp32", posenc_alibi_bias(&cfg, &t, &qpos, 0));
    }
    for (k = 0; k < x->n; ++k)
      check_close(c->name, add ? "add_alibi_bias fp32 (bits)" : "alibi_bias fp32 (bits)", k, got[k], (float)want->f[k], 0.0);
  }
  t = posenc_tensor_contiguous(&refused, POSENC_F64, 4, (const int64_t[]){1, x->dims[0], 1, 1});
  check_close(c->name, "fp32 on f64 scores refused", 0,
              posenc_add_alibi_bias(&cfg, &t, &qpos, 0) == POSENC_INVALID_ARGUMENT && refused == 1.25, 1.0, 0.0);
  free(got);
}

/* Add cases: y = x + T[positions]; table cases: x = 0 at positions P0 + l (one sequence), y = table. */
static void sinusoidal_case(const gcase* c) {
  const int table = opt_arr(c, "table") != NULL;
  const garray *want = arr(c, table ? "table" : "y"), *x = table ? NULL : arr(c, "x"), *ids = table ? NULL : arr(c, "positions");
  const int64_t dim = pint(c, "dim"), pad = has(c, "padding_idx") ? pint(c, "padding_idx") : -1;
  const double base = pnum(c, "base");
  double *in = NULL, *out = NULL;
  posenc_tensor tin, tout;
  posenc_positions pos;
  int64_t shape[3], pmax;
  long k, skipped = 0;
  int in_place;
  if (want == NULL || (!table && (x == NULL || ids == NULL))) return;
  shape[0] = table ? 1 : want->dims[0];
  shape[1] = table ? want->dims[0] : want->dims[1];
  shape[2] = table ? want->dims[1] : want->dims[2];
  pos = table ? posenc_positions_offset(pint(c, "offset"))
              : posenc_positions_per_token(ids->i, POSENC_I64, ids->dims[0], ids->dims[1], -1);
  pmax = table ? pint(c, "offset") + shape[1] - 1 : max_of(ids);
  for (in_place = 0; in_place < 2; ++in_place) {
    const char* what = in_place ? "sinusoidal f64 in place" : "sinusoidal f64 out of place";
    in = (double*)calloc((size_t)want->n + 1, sizeof(double));
    out = (double*)calloc((size_t)want->n + 1, sizeof(double));
    if (in == NULL || out == NULL) break;
    for (k = 0; k < want->n && x != NULL; ++k) in[k] = x->f[k];
    tin = posenc_tensor_contiguous(in, POSENC_F64, 3, shape);
    tout = posenc_tensor_contiguous(out, POSENC_F64, 3, shape);
    check_status(c->name, what,
                 posenc_add_sinusoidal(dim, base, is(c, "layout", "concat") ? POSENC_SINUSOIDAL_CONCAT
                                                                                                  : POSENC_SINUSOIDAL_INTERLEAVED,
                                       &tin, in_place ? NULL : &tout, &pos));
    for (k = 0; k < want->n; ++k) {
      const long row = k / (long)dim;
      const int64_t p = table ? pint(c, "offset") + row : ids->i[row];
      if (p == pad) { /* fairseq's zero row: the C API has no padding_idx (see the top of the file) */
        ++skipped;
        continue;
      }
      check_close(c->name, what, k, in_place ? in[k] : out[k], want->f[k],
                  1e-12 * dmax(1.0, fabs(want->f[k])) + (double)pmax * (2.0 + log(base)) * ldexp(1.0, -53));
    }
    free(in), free(out);
    in = out = NULL;
  }
  free(in), free(out);
  if (skipped) printf("  %s: %ld values at padding_idx %lld not compared (no padding_idx in the C API)\n", c->name, skipped / 2, (long long)pad);
}

/* T5 bias, table_* cases: scores [1, 3, Lq, Lk] of 1.0 plus a [num_buckets, 3] table of distinct exactly
 * representable values 0.25 b + 16 h (float32 and float64 tables): exactly 1.0 + table[buckets[i, j], h]. */
static void t5_bias_check(const gcase* c, const garray* buckets) {
  enum { T5H = 3 };
  const int64_t nb = pint(c, "num_buckets"), lq = buckets->dims[0], lk = buckets->dims[1];
  const posenc_positions qpos = posenc_positions_offset(pint(c, "query_offset"));
  posenc_t5_bias* bias;
  posenc_tensor ttab, tscores;
  double* table = (double*)malloc((size_t)(nb * T5H) * sizeof(double) + 1);
  double* scores = (double*)malloc((size_t)(T5H * lq * lk) * sizeof(double) + 1);
  long k, b, h;
  int f64;
  for (f64 = 0; f64 < 2 && table != NULL && scores != NULL; ++f64) {
    const char* what = f64 ? "t5 bias f64 table (exact)" : "t5 bias f32 table (exact)";
    for (b = 0; b < nb; ++b)
      for (h = 0; h < T5H; ++h) {
        if (f64) table[b * T5H + h] = 0.25 * (double)b + 16.0 * (double)h;
        else ((float*)table)[b * T5H + h] = 0.25f * (float)b + 16.0f * (float)h;
      }
    for (k = 0; k < T5H * lq * lk; ++k) {
      if (f64) scores[k] = 1.0;
      else ((float*)scores)[k] = 1.0f;
    }
    bias = NULL;
    ttab = posenc_tensor_contiguous(table, f64 ? POSENC_F64 : POSENC_F32, 2, (const int64_t[]){nb, T5H});
    tscores = posenc_tensor_contiguous(scores, f64 ? POSENC_F64 : POSENC_F32, 4, (const int64_t[]){1, T5H, lq, lk});
    check_status(c->name, "t5_bias_create", posenc_t5_bias_create(T5H, (int32_t)pint(c, "bidirectional"), nb, pint(c, "max_distance"), &ttab, &bias));
    if (bias == NULL) continue;
    check_status(c->name, "add_t5_bias", posenc_add_t5_bias(bias, &tscores, &qpos));
    for (k = 0; k < T5H * lq * lk; ++k) {
      const long ij = k % (lq * lk);
      const double want = 1.0 + 0.25 * (double)buckets->i[ij] + 16.0 * (double)(k / (lq * lk));
      check_close(c->name, what, k, f64 ? scores[k] : (double)((float*)scores)[k], want, 0.0);
    }
    posenc_t5_bias_destroy(bias);
  }
  free(table), free(scores);
}

static void t5_case(const gcase* c) {
  const int bidir = (int)pint(c, "bidirectional");
  const int64_t nb = pint(c, "num_buckets"), md = pint(c, "max_distance");
  const int table = starts(c->name, "table_");
  const garray *rel = table ? NULL : arr(c, "relative"), *want = arr(c, table ? "buckets" : "bucket");
  long k;
  if (want == NULL || (!table && rel == NULL)) return;
  for (k = 0; k < want->n; ++k) {
    int64_t r, b = -12345;
    posenc_status s;
    if (table) r = (k % want->dims[1]) - (k / want->dims[1] + pint(c, "query_offset")); /* j - (i + P0) */
    else r = rel->i[k];
    s = posenc_t5_bucket(r, bidir, nb, md, &b);
    ++g_checks;
    if (s != POSENC_OK || b != want->i[k])
      failure("%s t5 bucket [%ld] relative %lld: got %lld (%s) expected %lld", c->name, k, (long long)r, (long long)b,
              posenc_status_name(s), (long long)want->i[k]);
  }
  if (table) t5_bias_check(c, want);
}

static void xpos_case(const gcase* c) {
  const garray *x = arr(c, "x"), *y = arr(c, "y");
  const int64_t d = pint(c, "head_dim"), p0 = pint(c, "offset");
  const int relative = is(c, "tolerance_mode", "relative"), interleaved = is(c, "style", "interleaved");
  double* buf;
  posenc_tensor t;
  posenc_positions pos = posenc_positions_offset(p0);
  double angle;
  long k;
  if (x == NULL || y == NULL || x->rank != 3 || (buf = (double*)malloc((size_t)x->n * sizeof(double) + 1)) == NULL) return;
  memcpy(buf, x->f, (size_t)x->n * sizeof(double));
  t = posenc_tensor_contiguous(buf, POSENC_F64, 4, (const int64_t[]){x->dims[0], x->dims[1], 1, x->dims[2]});
  check_status(c->name, "apply_xpos",
               posenc_apply_xpos(d, pnum(c, "scale_base"), pnum(c, "gamma"), pnum(c, "base"),
                                 interleaved ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALF_SPLIT, &t, &pos,
                                 pint(c, "center"), (int32_t)pint(c, "downscale")));
  angle = 1.5 * ldexp((double)(p0 + x->dims[1]), -52);
  for (k = 0; k < x->n; ++k) {
    const long f = k % (long)d, row0 = k - f, half = (long)d / 2;
    const long partner = interleaved ? (f ^ 1) : (f < half ? f + half : f - half);
    const double want = y->f[k], pair = hypot(want, y->f[row0 + partner]);
    const double tol = (relative ? 1e-12 * fabs(want) : 1e-12 * dmax(1.0, fabs(want))) + angle * pair;
    check_close(c->name, relative ? "xpos f64 (relative)" : "xpos f64 (absolute)", k, buf[k], want, tol);
  }
  free(buf);
}

/* ---- rope_append_kv into paged caches ----------------------------------------------------------------------- */

enum { KN = 2, KL = 3, HQ = 4, HK = 2, KD = 16, HALL = HQ + 2 * HK, BLOCKS = 3, BLOCK = 4 };

static void compare_bits(const char* what, const float* got, const float* want, long n) {
  long k;
  ++g_checks;
  for (k = 0; k < n; ++k)
    if (memcmp(&got[k], &want[k], sizeof(float)) != 0) {
      failure("kv_append %s [%ld]: got %.9g expected %.9g (bit-exact)", what, k, got[k], want[k]);
      return;
    }
}

static void kv_append_check(void) {
  static float qkv[KN * KL * HALL * KD], expect_qkv[KN * KL * HALL * KD], kref[KN * KL * HK * KD];
  static float kc[BLOCKS * BLOCK * HK * KD], vc[BLOCKS * BLOCK * HK * KD], expect_kc[BLOCKS * BLOCK * HK * KD],
      expect_vc[BLOCKS * BLOCK * HK * KD];
  const int64_t slots[KN * KL] = {5, 0, 11, 7, -1, 2}; /* token (1, 1) is skipped */
  const int64_t starts_at[KN] = {3, 10};
  const int64_t cache_shape[4] = {BLOCKS, BLOCK, HK, KD}, ref_shape[4] = {KN, KL, HK, KD};
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_rope_cache* cache = NULL;
  posenc_positions pos = posenc_positions_per_sequence(starts_at, POSENC_I64, KN);
  posenc_kv_slots ks = posenc_kv_slots_paged(slots, KN, KL);
  posenc_tensor q, k, v, eq, ek, tkc, tvc, tref;
  int src, t, i;
  posenc_rope_config_init(&cfg);
  cfg.head_dim = KD;
  check_status("kv_append", "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  if (plan == NULL) return;
  check_status("kv_append", "cache_create", posenc_rope_cache_create(plan, 64, POSENC_F32, &cache));
  for (src = 0; src < 2 && (src == 0 || cache != NULL); ++src) {
    const posenc_rope_plan* p = src == 0 ? plan : NULL;
    const posenc_rope_cache* cc = src == 0 ? NULL : cache;
    for (i = 0; i < KN * KL * HALL * KD; ++i) qkv[i] = (float)((i * 37 + 11) % 101 - 50) / 64.0f;
    for (i = 0; i < BLOCKS * BLOCK * HK * KD; ++i) kc[i] = vc[i] = -123.5f;
    memcpy(expect_qkv, qkv, sizeof qkv);
    memcpy(expect_kc, kc, sizeof kc);
    memcpy(expect_vc, vc, sizeof vc);
    /* Views into the fused buffer: heads [0, HQ) q, [HQ, HQ + HK) k, the rest v. */
    q = posenc_tensor_contiguous(qkv, POSENC_F32, 4, (const int64_t[]){KN, KL, HQ, KD});
    q.strides[0] = KL * HALL * KD, q.strides[1] = HALL * KD;
    k = q, k.shape[2] = HK, k.data = qkv + HQ * KD;
    v = k, v.data = qkv + (HQ + HK) * KD;
    eq = q, eq.data = expect_qkv;
    ek = k, ek.data = expect_qkv + HQ * KD;
    tkc = posenc_tensor_contiguous(kc, POSENC_F32, 4, cache_shape);
    tvc = posenc_tensor_contiguous(vc, POSENC_F32, 4, cache_shape);
    tref = posenc_tensor_contiguous(kref, POSENC_F32, 4, ref_shape);
    /* The expected state: k rotated out of place by apply_rope, q in place, rows placed by slot. */
    check_status("kv_append", "reference apply_rope k", posenc_apply_rope(p, cc, &ek, &tref, &pos, 0));
    for (t = 0; t < KN * KL; ++t) {
      if (slots[t] < 0) continue;
      memcpy(&expect_kc[slots[t] * HK * KD], &kref[t * HK * KD], HK * KD * sizeof(float));
      memcpy(&expect_vc[slots[t] * HK * KD], &expect_qkv[t * HALL * KD + (HQ + HK) * KD], HK * KD * sizeof(float));
    }
    check_status("kv_append", "reference apply_rope q", posenc_apply_rope(p, cc, &eq, NULL, &pos, 0));
    check_status("kv_append", "rope_append_kv", posenc_rope_append_kv(p, cc, &q, &k, &v, &tkc, &tvc, &pos, &ks));
    compare_bits(src ? "cache: k_cache" : "plan: k_cache", kc, expect_kc, BLOCKS * BLOCK * HK * KD);
    compare_bits(src ? "cache: v_cache" : "plan: v_cache", vc, expect_vc, BLOCKS * BLOCK * HK * KD);
    compare_bits(src ? "cache: qkv (q rotated, k v untouched)" : "plan: qkv (q rotated, k v untouched)", qkv, expect_qkv,
                 KN * KL * HALL * KD);
  }
  posenc_rope_cache_destroy(cache);
  posenc_rope_plan_destroy(plan);
}

/* ---- fused RoPE + int8 / fp8 (quant.txt kind fused, rope_append_kv_quantized) -------------------------------- */

/* The four quantisations of a fused case: golden codes, golden scales, format. */
enum { Q_INT8_DYN, Q_INT8, Q_E4M3, Q_E5M2, Q_VARIANTS };
static const char* const q_name[Q_VARIANTS] = {"int8 dynamic", "int8 per-head", "fp8 e4m3", "fp8 e5m2"};
static const char* const q_codes_key[Q_VARIANTS] = {"int8_dyn", "int8", "e4m3", "e5m2"};
static const char* const q_scale_key[Q_VARIANTS] = {"int8_dyn_scale", "int8_scale", "e4m3_scale", "e5m2_scale"};
static long g_qdiff[Q_VARIANTS], g_qcodes[Q_VARIANTS]; /* codes one step off the golden ones, codes compared */

/* Magnitude of fp8 code c (0 .. 0x7F, sign bit clear): OCP E4M3 (bias 7, 3 mantissa bits) or E5M2 (bias 15, 2). */
static double fp8_value(int c, int e5m2) {
  const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const int e = c >> mbits, m = c & ((1 << mbits) - 1);
  return e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp((double)((1 << mbits) + m), e - bias - mbits);
}

/* The code of the already-scaled float v (FORMAT.md, detail/math/quant.hpp): int8 round half to even, saturated,
 * NaN -> 0; fp8 nearest with ties to the even code (= even mantissa), saturating to the largest finite value
 * (448 / 57344), underflow keeps the sign, NaN -> 0x7F | sign (E4M3) / 0x7E | sign (E5M2). */
static int quant_code(float v, int variant) {
  const int e5m2 = variant == Q_E5M2, max_code = e5m2 ? 0x7B : 0x7E, sign = signbit(v) ? 0x80 : 0;
  const double mag = fabs((double)v);
  int c, best = 0;
  if (variant == Q_INT8_DYN || variant == Q_INT8) {
    const double r = rint((double)v); /* the default rounding mode: half to even */
    return v != v ? 0 : r < -128.0 ? -128 : r > 127.0 ? 127 : (int)r;
  }
  if (v != v) return (e5m2 ? 0x7E : 0x7F) | sign;
  if (mag >= fp8_value(max_code, e5m2)) return max_code | sign;
  for (c = 1; c <= max_code; ++c) {
    const double d = fabs(fp8_value(c, e5m2) - mag), db = fabs(fp8_value(best, e5m2) - mag);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  return best | sign;
}

/* A code as a signed step count: int8 codes are their value; fp8 codes their magnitude's index with the sign
 * (adjacent fp8 values have adjacent codes; -0 and +0 are both 0). */
static int code_ordinal(int code, int variant) {
  if (variant == Q_INT8_DYN || variant == Q_INT8) return code;
  return (code & 0x80) ? -(code & 0x7F) : code;
}

/* One quantisation of one fused case: codes (and dynamic scales) against the golden ones and against the codes of
 * the kernel's own float32 rotation yk (posenc_apply_rope of the same input and source). */
static void quant_run(const gcase* c, const posenc_rope_plan* plan, const posenc_rope_cache* cache, int f64,
                      const posenc_positions* pos, const float* yk, int variant, const char* src_name) {
  const garray *x = arr(c, "x"), *y = arr(c, "y"), *want = arr(c, q_codes_key[variant]), *wscale = arr(c, q_scale_key[variant]);
  const int dynamic = variant == Q_INT8_DYN, is_i8 = variant == Q_INT8_DYN || variant == Q_INT8;
  const long d = x ? x->dims[3] : 0, heads = x ? x->dims[2] : 0;
  posenc_quant_spec spec;
  posenc_tensor tin, tcodes, tscales;
  unsigned char* codes = NULL;
  float *scales = NULL, given[64];
  void* in = NULL;
  char what[160];
  long k, row, diff = 0;
  if (x == NULL || y == NULL || want == NULL || wscale == NULL || heads > 64) {
    failure("%s %s: case not runnable", c->name, q_name[variant]);
    return;
  }
  snprintf(what, sizeof what, "quant %s %s %s", q_name[variant], f64 ? "f64 in" : "f32 in", src_name);
  in = malloc((size_t)x->n * sizeof(double) + 1);
  codes = (unsigned char*)malloc((size_t)x->n + 1);
  scales = (float*)malloc((size_t)(x->n / d) * sizeof(float) + 1);
  if (in == NULL || codes == NULL || scales == NULL) goto done;
  for (k = 0; k < x->n; ++k) {
    if (f64) ((double*)in)[k] = x->f[k];
    else ((float*)in)[k] = (float)x->f[k];
  }
  memset(codes, 0xA5, (size_t)x->n);
  for (k = 0; k < x->n / d; ++k) scales[k] = -7.0f;
  posenc_quant_spec_init(&spec);
  if (!dynamic) {
    for (k = 0; k < heads; ++k) given[k] = (float)wscale->f[k]; /* exactly float32 (FORMAT.md) */
    spec.scales = given;
    spec.format = variant == Q_INT8 ? POSENC_QUANT_INT8 : variant == Q_E4M3 ? POSENC_QUANT_FP8_E4M3 : POSENC_QUANT_FP8_E5M2;
  }
  tin = posenc_tensor_contiguous(in, f64 ? POSENC_F64 : POSENC_F32, 4, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2], x->dims[3]});
  tcodes = tin, tcodes.data = codes, tcodes.dtype = is_i8 ? POSENC_I8 : POSENC_U8;
  tscales = posenc_tensor_contiguous(scales, POSENC_F32, 3, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2]});
  check_status(c->name, what, posenc_apply_rope_quantized(plan, cache, &tin, &tcodes, dynamic ? &tscales : NULL, pos, &spec));
  for (row = 0; row < x->n / d; ++row) {
    const long h = row % heads;
    float scale = dynamic ? 0.0f : given[h], inv, absmax = 0.0f;
    if (dynamic) {
      for (k = 0; k < d; ++k) absmax = fabsf(yk[row * d + k]) > absmax ? fabsf(yk[row * d + k]) : absmax;
      scale = absmax / 127.0f;
      check_close(c->name, "quant dynamic scale (rel 2^-21)", row, scales[row], wscale->f[row], ldexp(fabs(wscale->f[row]), -21));
      ++g_checks;
      if (scales[row] != scale)
        failure("%s %s scale [%ld]: got %.9g, absmax/127 of its own rotation %.9g", c->name, what, row, scales[row], scale);
    }
    inv = scale == 0.0f ? 0.0f : 1.0f / scale;
    for (k = row * d; k < (row + 1) * d; ++k) {
      const int got = is_i8 ? (int)(signed char)codes[k] : (int)codes[k];
      const int own = quant_code(yk[k] * inv, variant);
      const int step = abs(code_ordinal(got, variant) - code_ordinal((int)want->i[k], variant));
      g_checks += 2;
      if (step > 1) failure("%s %s [%ld]: code %d, golden %d (%d steps; y %.9g)", c->name, what, k, got, (int)want->i[k], step, y->f[k]);
      diff += step != 0;
      if (got != own)
        failure("%s %s [%ld]: code %d, but its own rotation %.9g gives %d (golden %d)", c->name, what, k, got, yk[k], own, (int)want->i[k]);
    }
  }
  g_qdiff[variant] += diff, g_qcodes[variant] += x->n;
  if (diff) printf("  %s %s: %ld of %ld codes one step off the golden codes\n", c->name, what, diff, x->n);
  for (k = 0; k < x->n; ++k)
    if (f64 ? ((double*)in)[k] != x->f[k] : ((float*)in)[k] != (float)x->f[k]) k = x->n, failure("%s %s: input modified", c->name, what);
done:
  free(in), free(codes), free(scales);
}

/* A fused case: float32 and float64 input, plan and float32 cache, each through the four quantisations. */
static void quant_case(const gcase* c) {
  const garray *x = arr(c, "x"), *positions = arr(c, "positions");
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_rope_cache* c32 = NULL;
  posenc_positions pos;
  posenc_tensor tin, tout;
  void* in = NULL;
  float* yk = NULL;
  long k;
  int f64, src, v;
  if (x == NULL || positions == NULL || x->rank != 4 || rope_config_of(c, &cfg) != 0) {
    failure("%s: case not runnable", c->name);
    return;
  }
  pos = posenc_positions_per_token(positions->i, POSENC_I64, positions->dims[0], positions->dims[1], -1);
  check_status(c->name, "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  if (plan == NULL) return;
  check_status(c->name, "cache_create f32", posenc_rope_cache_create(plan, max_of(positions) + 1, POSENC_F32, &c32));
  in = malloc((size_t)x->n * sizeof(double) + 1);
  yk = (float*)malloc((size_t)x->n * sizeof(float) + 1);
  for (f64 = 0; f64 < 2 && in != NULL && yk != NULL; ++f64)
    for (src = 0; src < 2 && (src == 0 || c32 != NULL); ++src) {
      const posenc_rope_plan* p = src == 0 ? plan : NULL;
      const posenc_rope_cache* cc = src == 0 ? NULL : c32;
      for (k = 0; k < x->n; ++k) {
        if (f64) ((double*)in)[k] = x->f[k];
        else ((float*)in)[k] = (float)x->f[k];
      }
      /* The kernel's own rotation: the same input, source and positions, rounded once to float32. */
      tin = posenc_tensor_contiguous(in, f64 ? POSENC_F64 : POSENC_F32, 4, (const int64_t[]){x->dims[0], x->dims[1], x->dims[2], x->dims[3]});
      tout = tin, tout.data = yk, tout.dtype = POSENC_F32;
      check_status(c->name, "reference apply_rope", posenc_apply_rope(p, cc, &tin, &tout, &pos, 0));
      for (v = 0; v < Q_VARIANTS; ++v) quant_run(c, p, cc, f64, &pos, yk, v, src == 0 ? "plan" : "cache<f32>");
    }
  free(in), free(yk);
  posenc_rope_cache_destroy(c32);
  posenc_rope_plan_destroy(plan);
}

/* The differing codes of all fused runs, per format: more than 1% fails (FORMAT.md: boundary cases only). */
static void quant_summary(void) {
  int v;
  for (v = 0; v < Q_VARIANTS; ++v) {
    ++g_checks;
    printf("  quant %-13s %ld of %ld codes one step off the golden codes (%.2f%%)\n", q_name[v], g_qdiff[v], g_qcodes[v],
           g_qcodes[v] ? 100.0 * (double)g_qdiff[v] / (double)g_qcodes[v] : 0.0);
    if (g_qcodes[v] == 0) failure("quant %s: no code compared", q_name[v]);
    else if (100 * g_qdiff[v] > g_qcodes[v]) failure("quant %s: %ld of %ld codes differ (more than 1%%)", q_name[v], g_qdiff[v], g_qcodes[v]);
  }
}

/* int8 codes, exact; the first difference is printed. */
static void compare_codes(const char* what, const signed char* got, const signed char* want, long n) {
  long k;
  ++g_checks;
  for (k = 0; k < n; ++k)
    if (got[k] != want[k]) {
      failure("kv_append_quant %s [%ld]: code %d expected %d", what, k, got[k], want[k]);
      return;
    }
}

/* rope_append_kv_quantized: k (rotated) and v of the fused buffer into paged int8 caches with dynamic scales. */
static void kv_append_quant_check(void) {
  static float qkv[KN * KL * HALL * KD], before[KN * KL * HALL * KD], kref_scales[KN * KL * HK];
  static signed char kref[KN * KL * HK * KD], kc[BLOCKS * BLOCK * HK * KD], vc[BLOCKS * BLOCK * HK * KD],
      expect_kc[BLOCKS * BLOCK * HK * KD], expect_vc[BLOCKS * BLOCK * HK * KD];
  static float ks[BLOCKS * BLOCK * HK], vs[BLOCKS * BLOCK * HK], expect_ks[BLOCKS * BLOCK * HK], expect_vs[BLOCKS * BLOCK * HK];
  const int64_t slots[KN * KL] = {5, 0, 11, 7, -1, 2}; /* token (1, 1) is skipped */
  const int64_t starts_at[KN] = {3, 10};
  const int64_t cache_shape[4] = {BLOCKS, BLOCK, HK, KD}, scale_shape[3] = {BLOCKS, BLOCK, HK};
  posenc_rope_config cfg;
  posenc_rope_plan* plan = NULL;
  posenc_rope_cache* cache = NULL;
  posenc_positions pos = posenc_positions_per_sequence(starts_at, POSENC_I64, KN);
  posenc_kv_slots kslots = posenc_kv_slots_paged(slots, KN, KL);
  posenc_quant_spec spec;
  posenc_tensor k, v, tkref, tkref_s, tkc, tvc, tks, tvs;
  int src, t, h, i;
  posenc_rope_config_init(&cfg);
  cfg.head_dim = KD;
  posenc_quant_spec_init(&spec); /* dynamic int8 */
  check_status("kv_append_quant", "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  if (plan == NULL) return;
  check_status("kv_append_quant", "cache_create", posenc_rope_cache_create(plan, 64, POSENC_F32, &cache));
  for (src = 0; src < 2 && (src == 0 || cache != NULL); ++src) {
    const posenc_rope_plan* p = src == 0 ? plan : NULL;
    const posenc_rope_cache* cc = src == 0 ? NULL : cache;
    for (i = 0; i < KN * KL * HALL * KD; ++i) qkv[i] = (float)((i * 37 + 11) % 101 - 50) / 64.0f;
    for (i = 0; i < HK * KD; ++i) qkv[(1 * HALL + HQ + HK) * KD + i] = 0.0f; /* token (0, 1): v all zero, scale 0 */
    /* token (1, 0) v head 0: absmax 1, scale 1/127.0f, and two values whose codes by v * (1/scale) (5, -7) are not
     * those of v / scale (6, -8): the multiply of FORMAT.md is what is checked */
    qkv[(KL * HALL + HQ + HK) * KD + 0] = 1.0f;
    qkv[(KL * HALL + HQ + HK) * KD + 1] = 0x1.62c58ap-5f;
    qkv[(KL * HALL + HQ + HK) * KD + 2] = -0x1.e3c78ep-5f;
    memcpy(before, qkv, sizeof qkv);
    memset(kc, 0x5A, sizeof kc), memset(vc, 0x5A, sizeof vc);
    for (i = 0; i < BLOCKS * BLOCK * HK; ++i) ks[i] = vs[i] = -7.0f;
    memcpy(expect_kc, kc, sizeof kc), memcpy(expect_vc, vc, sizeof vc);
    memcpy(expect_ks, ks, sizeof ks), memcpy(expect_vs, vs, sizeof vs);
    k = posenc_tensor_contiguous(qkv + HQ * KD, POSENC_F32, 4, (const int64_t[]){KN, KL, HK, KD});
    k.strides[0] = KL * HALL * KD, k.strides[1] = HALL * KD;
    v = k, v.data = qkv + (HQ + HK) * KD;
    tkref = posenc_tensor_contiguous(kref, POSENC_I8, 4, (const int64_t[]){KN, KL, HK, KD});
    tkref_s = posenc_tensor_contiguous(kref_scales, POSENC_F32, 3, (const int64_t[]){KN, KL, HK});
    tkc = posenc_tensor_contiguous(kc, POSENC_I8, 4, cache_shape);
    tvc = posenc_tensor_contiguous(vc, POSENC_I8, 4, cache_shape);
    tks = posenc_tensor_contiguous(ks, POSENC_F32, 3, scale_shape);
    tvs = posenc_tensor_contiguous(vs, POSENC_F32, 3, scale_shape);
    /* Expected: k through apply_rope_quantized, v quantised here, rows placed by slot. */
    check_status("kv_append_quant", "reference apply_rope_quantized k", posenc_apply_rope_quantized(p, cc, &k, &tkref, &tkref_s, &pos, &spec));
    for (t = 0; t < KN * KL; ++t) {
      if (slots[t] < 0) continue;
      memcpy(&expect_kc[slots[t] * HK * KD], &kref[t * HK * KD], HK * KD);
      memcpy(&expect_ks[slots[t] * HK], &kref_scales[t * HK], HK * sizeof(float));
      for (h = 0; h < HK; ++h) {
        const float* row = &qkv[t * HALL * KD + (HQ + HK + h) * KD];
        float absmax = 0.0f, scale, inv;
        for (i = 0; i < KD; ++i) absmax = fabsf(row[i]) > absmax ? fabsf(row[i]) : absmax;
        scale = absmax / 127.0f;
        inv = scale == 0.0f ? 0.0f : 1.0f / scale;
        expect_vs[slots[t] * HK + h] = scale;
        for (i = 0; i < KD; ++i) expect_vc[(slots[t] * HK + h) * KD + i] = (signed char)quant_code(row[i] * inv, Q_INT8_DYN);
      }
    }
    check_status("kv_append_quant", "rope_append_kv_quantized",
                 posenc_rope_append_kv_quantized(p, cc, &k, &v, &tkc, &tvc, &pos, &kslots, &spec, &spec, &tks, &tvs));
    compare_codes(src ? "cache: k_cache" : "plan: k_cache", kc, expect_kc, sizeof kc);
    compare_bits(src ? "quantized cache: k_scales" : "quantized plan: k_scales", ks, expect_ks, BLOCKS * BLOCK * HK);
    compare_codes(src ? "cache: v_cache (v * (1/scale))" : "plan: v_cache (v * (1/scale))", vc, expect_vc, sizeof vc);
    compare_bits(src ? "quantized cache: v_scales" : "quantized plan: v_scales", vs, expect_vs, BLOCKS * BLOCK * HK);
    compare_bits(src ? "quantized cache: fused input untouched" : "quantized plan: fused input untouched", qkv, before,
                 KN * KL * HALL * KD);
  }
  posenc_rope_cache_destroy(cache);
  posenc_rope_plan_destroy(plan);
}

/* ---- learned positions, rerotation ----------------------------------------------------------------------------- */

/* posenc_add_learned: table [M + 2, D] of dyadic values, scale 0.5, position_offset 2, per-token positions;
 * x + 0.5 * table[p + 2] is exact in double. */
static void learned_check(void) {
  enum { LM = 8, LOFF = 2, LN = 2, LL = 3, LD = 4 };
  static double table[(LM + LOFF) * LD], x[LN * LL * LD], out[LN * LL * LD], xin[LN * LL * LD];
  const int64_t ids[LN * LL] = {0, 5, 7, 3, 1, 6};
  const int64_t shape[3] = {LN, LL, LD};
  const posenc_positions pos = posenc_positions_per_token(ids, POSENC_I64, LN, LL, -1);
  posenc_learned* learned = NULL;
  posenc_tensor ttab, tin, tout;
  int i, in_place;
  for (i = 0; i < (LM + LOFF) * LD; ++i) table[i] = (double)i / 8.0 - 2.0;
  for (i = 0; i < LN * LL * LD; ++i) x[i] = (double)((i * 7) % 23) / 16.0 - 0.75;
  ttab = posenc_tensor_contiguous(table, POSENC_F64, 2, (const int64_t[]){LM + LOFF, LD});
  check_status("learned", "learned_create", posenc_learned_create(LM, LD, 0.5, LOFF, &ttab, &learned));
  if (learned == NULL) return;
  for (in_place = 0; in_place < 2; ++in_place) {
    const char* what = in_place ? "learned f64 in place (exact)" : "learned f64 out of place (exact)";
    memcpy(xin, x, sizeof x);
    for (i = 0; i < LN * LL * LD; ++i) out[i] = -99.0;
    tin = posenc_tensor_contiguous(xin, POSENC_F64, 3, shape);
    tout = posenc_tensor_contiguous(out, POSENC_F64, 3, shape);
    check_status("learned", what, posenc_add_learned(learned, &tin, in_place ? NULL : &tout, &pos));
    for (i = 0; i < LN * LL * LD; ++i)
      check_close("learned", what, i, in_place ? xin[i] : out[i], x[i] + 0.5 * table[(ids[i / LD] + LOFF) * LD + i % LD], 0.0);
    ++g_checks;
    if (!in_place && memcmp(xin, x, sizeof x) != 0) failure("learned %s: input modified", what);
  }
  posenc_learned_destroy(learned);
}

/* posenc_rerotate_rope between a plain plan and a linear (factor 4) one, both directions, float64. */
static void rerotate_check(void) {
  enum { RL = 4, RH = 2, RD = 32, RN = RL * RH * RD };
  static double x[RN], a[RN], b[RN];
  const int64_t ids[RL] = {0, 1, 4097, 30000};
  const int64_t shape[4] = {1, RL, RH, RD};
  const posenc_positions pos = posenc_positions_per_token(ids, POSENC_I64, 1, RL, -1);
  posenc_rope_config cfg;
  posenc_rope_plan *plain = NULL, *linear = NULL;
  posenc_tensor ta, tb;
  int i, dir;
  /* With the same double w on both sides, the sides differ by the roundings of p * w_from, w_to - w_from,
   * p * (w_to - w_from) and p * w_to, each <= 2^-53 p (w <= 1): 4 * 2^-53 p, within two angle bounds. */
  const double tol_angle = 2.0 * angle_bound(30000, sqrt(2.0), 1.0);
  for (i = 0; i < RN; ++i) x[i] = (double)((i * 29 + 5) % 61 - 30) / 32.0;
  posenc_rope_config_init(&cfg);
  cfg.head_dim = RD;
  check_status("rerotate", "plan_create none", posenc_rope_plan_create(&cfg, 0, &plain));
  cfg.scaling = POSENC_SCALING_LINEAR, cfg.factor = 4.0;
  check_status("rerotate", "plan_create linear 4", posenc_rope_plan_create(&cfg, 0, &linear));
  for (dir = 0; dir < 2 && plain != NULL && linear != NULL; ++dir) {
    const posenc_rope_plan *from = dir == 0 ? plain : linear, *to = dir == 0 ? linear : plain;
    const char* what = dir == 0 ? "rerotate none -> linear 4" : "rerotate linear 4 -> none";
    memcpy(a, x, sizeof x), memcpy(b, x, sizeof x);
    ta = posenc_tensor_contiguous(a, POSENC_F64, 4, shape);
    tb = posenc_tensor_contiguous(b, POSENC_F64, 4, shape);
    check_status("rerotate", "apply_rope from", posenc_apply_rope(from, NULL, &ta, NULL, &pos, 0));
    check_status("rerotate", what, posenc_rerotate_rope(from, to, &ta, &pos));
    check_status("rerotate", "apply_rope to", posenc_apply_rope(to, NULL, &tb, NULL, &pos, 0));
    for (i = 0; i < RN; ++i) check_close("rerotate", what, i, a[i], b[i], 1e-12 * dmax(1.0, fabs(b[i])) + tol_angle);
  }
  posenc_rope_plan_destroy(plain);
  posenc_rope_plan_destroy(linear);
}

/* ---- rejected calls ------------------------------------------------------------------------------------------ */

/* After a rejected call: a non-OK status, a message, and `out` as it was (`before`). */
static void expect_rejected(const char* what, posenc_status s, const void* out, const void* before, size_t size) {
  char msg[512];
  const size_t len = posenc_last_error(msg, sizeof msg);
  ++g_checks;
  if (s == POSENC_OK) failure("rejected %s: returned OK", what);
  else if (len == 0 || msg[0] == '\0') failure("rejected %s: status %s but posenc_last_error is empty", what, posenc_status_name(s));
  else if (memcmp(out, before, size) != 0) failure("rejected %s: output modified", what);
  else printf("  rejected %-40s %-17s \"%s\"\n", what, posenc_status_name(s), msg);
}

/* A successful call first, so that a message can only come from the rejected call. */
static void clear_error(void) {
  int64_t b;
  char msg[8];
  ++g_checks;
  if (posenc_t5_bucket(0, 1, 32, 128, &b) != POSENC_OK || posenc_last_error(msg, sizeof msg) != 0)
    failure("rejected: a successful call leaves a message in posenc_last_error");
}

static void rejected_calls(const char* dir) {
  double x[16], out[16], before[16], freq[8];
  const int64_t shape[4] = {1, 2, 1, 8};
  posenc_rope_config cfg;
  posenc_rope_plan *plan = NULL, *no_plan, *const no_plan0 = (posenc_rope_plan*)(void*)&freq[0];
  posenc_rope_cache* cache = NULL;
  posenc_model_config *model, *const model0 = (posenc_model_config*)(void*)&x[0];
  posenc_positions pos = posenc_positions_offset(3);
  posenc_tensor tin, tout, bad;
  char path[1024];
  int i;
  for (i = 0; i < 16; ++i) x[i] = 0.25 * i - 1.0, out[i] = 1000.0 + i;
  memcpy(before, out, sizeof out);
  posenc_rope_config_init(&cfg);
  cfg.head_dim = 8;
  check_status("rejected", "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  if (plan == NULL) return;
  check_status("rejected", "cache_create", posenc_rope_cache_create(plan, 16, POSENC_F64, &cache));
  tin = posenc_tensor_contiguous(x, POSENC_F64, 4, shape);
  tout = posenc_tensor_contiguous(out, POSENC_F64, 4, shape);

  clear_error();
  expect_rejected("null input tensor", posenc_apply_rope(plan, NULL, NULL, &tout, &pos, 0), out, before, sizeof out);
  clear_error();
  bad = posenc_tensor_contiguous(x, POSENC_F64, 3, (const int64_t[]){1, 2, 8});
  expect_rejected("rank 3 input", posenc_apply_rope(plan, NULL, &bad, &tout, &pos, 0), out, before, sizeof out);
  clear_error();
  bad = tin, bad.data = x + 8, bad.strides[1] = -8; /* would read x[0..8) if it were accepted */
  expect_rejected("negative stride", posenc_apply_rope(plan, NULL, &bad, &tout, &pos, 0), out, before, sizeof out);
  clear_error();
  bad = tin, bad.dtype = 99;
  expect_rejected("dtype 99", posenc_apply_rope(plan, NULL, &bad, &tout, &pos, 0), out, before, sizeof out);
  clear_error();
  expect_rejected("both plan and cache", posenc_apply_rope(plan, cache, &tin, &tout, &pos, 0), out, before, sizeof out);
  clear_error();
  memcpy(freq, before, sizeof freq);
  expect_rejected("inv_freq count 3 (R/2 = 4)", posenc_rope_plan_inv_freq(plan, freq, 3), freq, before, sizeof freq);
  clear_error();
  no_plan = no_plan0;
  cfg.head_dim = 0;
  expect_rejected("plan_create head_dim 0", posenc_rope_plan_create(&cfg, 0, &no_plan), &no_plan, &no_plan0, sizeof no_plan);
  clear_error();
  model = model0;
  snprintf(path, sizeof path, "%s/no_such_config.json", dir);
  expect_rejected("read_hf missing file", posenc_model_config_read_hf(path, &model), &model, &model0, sizeof model);
  clear_error();
  snprintf(path, sizeof path, "%s/no_such_model.gguf", dir);
  expect_rejected("read_gguf missing file", posenc_model_config_read_gguf(path, &model), &model, &model0, sizeof model);
  posenc_rope_cache_destroy(cache);
  posenc_rope_plan_destroy(plan);
}

/* The rejected calls of the MRoPE, quantising, T5 bias, learned and rerotation functions. */
static void rejected_new_calls(void) {
  double x[16], xb[16], tab[40], tabb[40];
  float fcodes[16], fcodes_b[16];
  signed char codes[16], codes_b[16], kc[16], kc_b[16];
  float scales[2], scales_b[2], fx[16];
  const int64_t shape[4] = {1, 2, 1, 8}, ids[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2}, good_sections[3] = {2, 1, 1}, bad_sections[3] = {2, 1, 0};
  const int64_t slot[2] = {0, -1};
  posenc_rope_config cfg;
  posenc_rope_plan *plan = NULL, *narrow = NULL;
  posenc_mrope_plan *mplan = NULL, *mout, *const mout0 = (posenc_mrope_plan*)(void*)&x[1];
  posenc_t5_bias *t5 = NULL, *t5out, *const t5out0 = (posenc_t5_bias*)(void*)&x[2];
  posenc_learned *learned = NULL, *lout, *const lout0 = (posenc_learned*)(void*)&x[3];
  posenc_positions pos = posenc_positions_offset(3), bad_pos = posenc_positions_offset(9);
  posenc_kv_slots kslots = posenc_kv_slots_paged(slot, 1, 2);
  posenc_quant_spec spec, fp8;
  posenc_tensor tx, tf, tc, tcf, ts, tkc, ttab, t3;
  int i;
  for (i = 0; i < 16; ++i) x[i] = 0.125 * i - 1.0, fx[i] = (float)x[i], fcodes[i] = 500.0f + (float)i, codes[i] = kc[i] = (signed char)(i - 8);
  for (i = 0; i < 40; ++i) tab[i] = 0.5 * i;
  scales[0] = scales[1] = -3.0f;
  memcpy(xb, x, sizeof x), memcpy(fcodes_b, fcodes, sizeof fcodes), memcpy(codes_b, codes, sizeof codes);
  memcpy(kc_b, kc, sizeof kc), memcpy(scales_b, scales, sizeof scales), memcpy(tabb, tab, sizeof tab);
  posenc_rope_config_init(&cfg);
  cfg.head_dim = 8;
  check_status("rejected", "plan_create", posenc_rope_plan_create(&cfg, 0, &plan));
  cfg.rotary_dim = 4;
  check_status("rejected", "plan_create rotary_dim 4", posenc_rope_plan_create(&cfg, 0, &narrow));
  if (plan == NULL || narrow == NULL) goto done;
  check_status("rejected", "mrope_plan_create", posenc_mrope_plan_create(plan, good_sections, 0, &mplan));
  tx = posenc_tensor_contiguous(x, POSENC_F64, 4, shape);
  tf = posenc_tensor_contiguous(fx, POSENC_F32, 4, shape);
  tc = posenc_tensor_contiguous(codes, POSENC_I8, 4, shape);
  tcf = posenc_tensor_contiguous(fcodes, POSENC_F32, 4, shape);
  ts = posenc_tensor_contiguous(scales, POSENC_F32, 3, (const int64_t[]){1, 2, 1});
  tkc = posenc_tensor_contiguous(kc, POSENC_I8, 4, (const int64_t[]){1, 2, 1, 8});
  posenc_quant_spec_init(&spec);
  posenc_quant_spec_init(&fp8);
  fp8.format = POSENC_QUANT_FP8_E4M3; /* with no scales: dynamic, which is int8 only */

  clear_error();
  expect_rejected("rerotate null from", posenc_rerotate_rope(NULL, plan, &tx, &pos), x, xb, sizeof x);
  clear_error();
  expect_rejected("rerotate null to", posenc_rerotate_rope(plan, NULL, &tx, &pos), x, xb, sizeof x);
  clear_error();
  expect_rejected("rerotate other rotary_dim", posenc_rerotate_rope(plan, narrow, &tx, &pos), x, xb, sizeof x);
  clear_error();
  mout = mout0;
  expect_rejected("mrope_plan_create null plan", posenc_mrope_plan_create(NULL, good_sections, 0, &mout), &mout, &mout0, sizeof mout);
  clear_error();
  mout = mout0;
  expect_rejected("mrope sections 2+1+0 (R/2 = 4)", posenc_mrope_plan_create(plan, bad_sections, 1, &mout), &mout, &mout0, sizeof mout);
  clear_error();
  expect_rejected("apply_mrope null plan", posenc_apply_mrope(NULL, &tx, ids, -1, 2, 0), x, xb, sizeof x);
  if (mplan != NULL) {
    clear_error();
    expect_rejected("apply_mrope batch -2", posenc_apply_mrope(mplan, &tx, ids, -2, 2, 0), x, xb, sizeof x);
    clear_error();
    expect_rejected("apply_mrope length 3 (L = 2)", posenc_apply_mrope(mplan, &tx, ids, 1, 3, 0), x, xb, sizeof x);
  }
  clear_error();
  expect_rejected("quantized codes POSENC_F32", posenc_apply_rope_quantized(plan, NULL, &tf, &tcf, &ts, &pos, &spec), fcodes,
                  fcodes_b, sizeof fcodes);
  clear_error();
  expect_rejected("quantized no plan, no cache", posenc_apply_rope_quantized(NULL, NULL, &tf, &tc, &ts, &pos, &spec), codes, codes_b, sizeof codes);
  clear_error();
  expect_rejected("quantized fp8 into POSENC_I8", posenc_apply_rope_quantized(plan, NULL, &tf, &tc, &ts, &pos, &fp8), codes, codes_b, sizeof codes);
  clear_error();
  tc.dtype = POSENC_U8;
  expect_rejected("quantized fp8 without scales", posenc_apply_rope_quantized(plan, NULL, &tf, &tc, NULL, &pos, &fp8), codes, codes_b, sizeof codes);
  tc.dtype = POSENC_I8;
  clear_error();
  expect_rejected("quantized dynamic, null scales", posenc_apply_rope_quantized(plan, NULL, &tf, &tc, NULL, &pos, &spec), codes,
                  codes_b, sizeof codes);
  clear_error();
  tcf = posenc_tensor_contiguous(fcodes, POSENC_F32, 4, (const int64_t[]){1, 2, 1, 8});
  expect_rejected("append quantized k_cache F32",
                  posenc_rope_append_kv_quantized(plan, NULL, &tf, &tf, &tcf, &tkc, &pos, &kslots, &spec, &spec, &ts, &ts),
                  fcodes, fcodes_b, sizeof fcodes);
  ++g_checks;
  if (memcmp(kc, kc_b, sizeof kc) != 0 || memcmp(scales, scales_b, sizeof scales) != 0)
    failure("rejected append quantized k_cache F32: v_cache or scales modified");
  clear_error();
  t5out = t5out0;
  ttab = posenc_tensor_contiguous(tab, POSENC_F32, 2, (const int64_t[]){8, 4});
  expect_rejected("t5_bias_create table [8, 4], H 3", posenc_t5_bias_create(3, 1, 8, 32, &ttab, &t5out), &t5out, &t5out0, sizeof t5out);
  clear_error();
  t5out = t5out0;
  expect_rejected("t5_bias_create null table", posenc_t5_bias_create(3, 1, 8, 32, NULL, &t5out), &t5out, &t5out0, sizeof t5out);
  clear_error();
  t3 = posenc_tensor_contiguous(x, POSENC_F64, 4, (const int64_t[]){1, 1, 2, 8});
  expect_rejected("add_t5_bias null bias", posenc_add_t5_bias(NULL, &t3, &pos), x, xb, sizeof x);
  ttab = posenc_tensor_contiguous(tab, POSENC_F64, 2, (const int64_t[]){8, 3});
  check_status("rejected", "t5_bias_create", posenc_t5_bias_create(3, 1, 8, 32, &ttab, &t5));
  if (t5 != NULL) {
    clear_error();
    expect_rejected("add_t5_bias 1 head (table 3)", posenc_add_t5_bias(t5, &t3, &pos), x, xb, sizeof x);
  }
  clear_error();
  lout = lout0;
  ttab = posenc_tensor_contiguous(tab, POSENC_F64, 2, (const int64_t[]){8, 4}); /* needs 8 + 2 rows */
  expect_rejected("learned_create table [8, 4] (10 rows)", posenc_learned_create(8, 4, 0.5, 2, &ttab, &lout), &lout, &lout0, sizeof lout);
  clear_error();
  lout = lout0;
  ttab = posenc_tensor_contiguous(tab, POSENC_F64, 2, (const int64_t[]){10, 4});
  expect_rejected("learned_create max_positions 0", posenc_learned_create(0, 4, 0.5, 2, &ttab, &lout), &lout, &lout0, sizeof lout);
  t3 = posenc_tensor_contiguous(x, POSENC_F64, 3, (const int64_t[]){1, 4, 4});
  clear_error();
  expect_rejected("add_learned null handle", posenc_add_learned(NULL, &t3, NULL, &pos), x, xb, sizeof x);
  check_status("rejected", "learned_create", posenc_learned_create(8, 4, 0.5, 2, &ttab, &learned));
  if (learned != NULL) {
    clear_error();
    expect_rejected("add_learned position 12 (max 8)", posenc_add_learned(learned, &t3, NULL, &bad_pos), x, xb, sizeof x);
  }
  ++g_checks;
  if (memcmp(tab, tabb, sizeof tab) != 0) failure("rejected: a table was modified");
done:
  posenc_learned_destroy(learned);
  posenc_t5_bias_destroy(t5);
  posenc_mrope_plan_destroy(mplan);
  posenc_rope_plan_destroy(narrow);
  posenc_rope_plan_destroy(plan);
}

/* ---- main ---------------------------------------------------------------------------------------------------- */

/* ---- models from files: tests/data/hf and tests/data/gguf (next to the golden directory) -------------------
 * What a Hugging Face config.json and a GGUF file say, read through the C API: the facts the files hold (written
 * out by hand from tests/data/hf/llama3.1.json and tests/data/gguf/make_gguf.py's llama3 model), and a plan
 * from the model equal, frequency by frequency, to a plan built from the same values by hand. */
static void model_checks(const char* golden_dir) {
  char path[1024];
  posenc_model_config* m = NULL;
  posenc_rope_config got, want;
  posenc_rope_plan *a = NULL, *b = NULL;
  double wa[64], wb[64];
  long k;
  snprintf(path, sizeof path, "%s/../data/hf/llama3.1.json", golden_dir);
  check_status("llama3.1.json", "model_config_read_hf", posenc_model_config_read_hf(path, &m));
  if (m == NULL) return;
  check_close("llama3.1.json", "num_heads", 0, (double)posenc_model_config_num_heads(m), 32, 0);
  check_close("llama3.1.json", "num_kv_heads", 0, (double)posenc_model_config_num_kv_heads(m), 8, 0);
  check_close("llama3.1.json", "max_positions", 0, (double)posenc_model_config_max_positions(m), 131072, 0);
  posenc_rope_config_init(&got);
  check_status("llama3.1.json", "model_config_rope", posenc_model_config_rope(m, &got));
  check_close("llama3.1.json", "head_dim", 0, (double)got.head_dim, 128, 0);
  check_close("llama3.1.json", "style half-split", 0, got.style, POSENC_ROPE_HALF_SPLIT, 0);
  check_close("llama3.1.json", "base", 0, got.base, 500000.0, 0);
  check_close("llama3.1.json", "scaling llama3", 0, got.scaling, POSENC_SCALING_LLAMA3, 0);
  check_close("llama3.1.json", "factor", 0, got.factor, 8.0, 0);
  check_close("llama3.1.json", "low_freq_factor", 0, got.low_freq_factor, 1.0, 0);
  check_close("llama3.1.json", "high_freq_factor", 0, got.high_freq_factor, 4.0, 0);
  check_close("llama3.1.json", "original_max_positions", 0, (double)got.original_max_positions, 8192, 0);
  posenc_rope_config_init(&want);
  want.head_dim = 128;
  want.base = 500000.0;
  want.scaling = POSENC_SCALING_LLAMA3;
  want.factor = 8.0;
  want.low_freq_factor = 1.0;
  want.high_freq_factor = 4.0;
  want.original_max_positions = 8192;
  check_status("llama3.1.json", "model_config_plan", posenc_model_config_plan(m, 0, &a));
  check_status("llama3.1.json", "rope_plan_create", posenc_rope_plan_create(&want, 0, &b));
  if (a != NULL && b != NULL) {
    check_status("llama3.1.json", "inv_freq", posenc_rope_plan_inv_freq(a, wa, 64));
    check_status("llama3.1.json", "inv_freq", posenc_rope_plan_inv_freq(b, wb, 64));
    for (k = 0; k < 64; ++k) check_close("llama3.1.json", "model plan == hand plan", k, wa[k], wb[k], 0);
  }
  posenc_rope_plan_destroy(a);
  posenc_rope_plan_destroy(b);
  posenc_model_config_destroy(m);
  m = NULL;
  a = NULL;
  snprintf(path, sizeof path, "%s/../data/gguf/llama3.gguf", golden_dir);
  check_status("llama3.gguf", "model_config_read_gguf", posenc_model_config_read_gguf(path, &m));
  if (m == NULL) return;
  check_close("llama3.gguf", "num_heads", 0, (double)posenc_model_config_num_heads(m), 32, 0);
  check_close("llama3.gguf", "num_kv_heads", 0, (double)posenc_model_config_num_kv_heads(m), 8, 0);
  check_close("llama3.gguf", "max_positions", 0, (double)posenc_model_config_max_positions(m), 131072, 0);
  posenc_rope_config_init(&got);
  check_status("llama3.gguf", "model_config_rope", posenc_model_config_rope(m, &got));
  /* llama.cpp permutes Llama's q/k: interleaved pairs; the 3.1 bands as rope_freqs per-pair divisors. */
  check_close("llama3.gguf", "style interleaved", 0, got.style, POSENC_ROPE_INTERLEAVED, 0);
  check_close("llama3.gguf", "freq_factor_count", 0, (double)got.freq_factor_count, 64, 0);
  check_status("llama3.gguf", "model_config_plan", posenc_model_config_plan(m, 0, &a));
  posenc_rope_plan_destroy(a);
  posenc_model_config_destroy(m);
}

int main(int argc, char** argv) {
  static const char* files[] = {"rope_basic.txt", "rope_scaling.txt", "mrope.txt", "quant.txt", "alibi.txt",
                                "sinusoidal.txt", "t5.txt", "xpos.txt", "models.txt", "vision.txt"};
  const int nfiles = (int)(sizeof files / sizeof files[0]);
  int f, i;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/golden directory>\n", argv[0]);
    return 2;
  }
  printf("golden_c: posenc %s, C API %d, ISA %s\n", posenc_version(), posenc_c_api_version(), posenc_active_isa());
  g_golden_dir = argv[1];
  for (f = 0; f < nfiles; ++f) {
    const char* file = files[f];
    gfile g;
    int run = 0;
    const long failures0 = g_failures;
    if (load_gfile(argv[1], file, &g) != 0) continue; /* counted as a failure */
    for (i = 0; i < g.n; ++i) {
      const gcase* c = &g.cases[i];
      ++run;
      if (starts(file, "rope_")) rope_case(c);
      else if (strcmp(file, "mrope.txt") == 0) mrope_case(c);
      else if (strcmp(file, "quant.txt") == 0 && is(c, "kind", "fused")) quant_case(c);
      else if (strcmp(file, "alibi.txt") == 0 && (starts(c->name, "slopes_") || starts(c->name, "bias_"))) alibi_case(c);
      else if (strcmp(file, "alibi.txt") == 0 && starts(c->name, "fp32_")) alibi_fp32_case(c);
      else if (strcmp(file, "sinusoidal.txt") == 0) sinusoidal_case(c);
      else if (strcmp(file, "t5.txt") == 0 && (starts(c->name, "boundary_") || starts(c->name, "table_"))) t5_case(c);
      else if (strcmp(file, "xpos.txt") == 0) xpos_case(c);
      else if (strcmp(file, "models.txt") == 0) model_layers_case(c);
      else if (strcmp(file, "vision.txt") == 0) vision_case(c);
      else --run, printf("  %s: case %s not handled\n", file, c->name);
    }
    if (strcmp(file, "quant.txt") == 0) quant_summary();
    printf("%s: %d of %d cases run, %ld failures\n", file, run, g.n, g_failures - failures0);
    if (run == 0) failure("%s: no case run", file);
    free_gfile(&g);
  }
  kv_append_check();
  printf("kv append (paged float32, plan and cache): done\n");
  kv_append_quant_check();
  printf("kv append quantized (paged int8, dynamic scales, plan and cache): done\n");
  learned_check();
  printf("learned add (float64, out of place and in place): done\n");
  rerotate_check();
  printf("rerotate (none <-> linear 4, float64): done\n");
  model_checks(argv[1]);
  printf("models (llama3.1.json, llama3.gguf): done\n");
  rejected_calls(argv[1]);
  rejected_new_calls();
  printf("max |error| and max |error| / tolerance per family:\n");
  for (i = 0; i < MAX_LABELS && g_max[i].label != NULL; ++i)
    printf("  %-34s %.3e  %.3f\n", g_max[i].label, g_max[i].err, g_max[i].ratio);
  printf("golden_c: %ld checks, %ld failures\n", g_checks, g_failures);
  return g_failures != 0;
}
