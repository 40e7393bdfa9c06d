/* golden_c.c -- the C API (include/posenc/c/posenc.h) against the golden data of tests/golden (FORMAT.md).
 * C99, <posenc/c/posenc.h> and the C standard library only. Usage: golden_c <golden-dir>.
 *
 * Checks and tolerances (|got - expected| <= tolerance, per element):
 *  - RoPE, rope_basic.txt and rope_scaling.txt, every case: float64 in place and float32 out of place (float in,
 *    float out), each through a plan and through a cache (float64 cache for the float64 run, float32 cache for
 *    the float32 run). float64: 1e-12 * max(1, |y|); float32: 2e-6 * max(1, |y|) (the project's stated
 *    tolerances, tests/test_util.hpp). Both plus the angle bound FORMAT.md prescribes: theta = p * w in double
 *    rounds w first, so y moves by up to 1.5 * (max position + 1) * 2^-52 * |pair| * magnitude (~1e-11 at
 *    p = 30000; without it the exact golden angle is not reachable in double). inv_freq relative 1e-12;
 *    magnitude and logit_scale relative 1e-14 (a few ulps of a closed-form double expression).
 *  - ALiBi: slopes relative 1e-15 (exact powers of two up to libm's exp2/pow); bias 1e-9 * max(1, |bias|)
 *    (|bias| reaches 25000 in bias_h4_far, so the bound is relative there).
 *  - Sinusoidal, add cases and table cases (a table is x = 0 plus T[P0 + l]): 1e-12 * max(1, |y|) plus the
 *    FORMAT.md angle bound p * (2 + ln base) * 2^-53 (2.5e-10 at p = 100000). The C API has no padding_idx
 *    (posenc_add_sinusoidal adds T[p] for every p), so the rows at position padding_idx, which fairseq zeroes
 *    (fairseq_padded_add, concat_padding_table), are not compared; every other row of those cases is.
 *  - T5 buckets: exact, boundary_* and table_* cases.
 *  - xPos: absolute 1e-12 * max(1, |y|) or relative 1e-12 * |y| per tolerance_mode, plus the angle bound
 *    1.5 * (P0 + L) * 2^-52 * |y pair| (tests/test_util.hpp expect_xpos_close; long_centre reaches p = 200007).
 *  - rope_append_kv into paged float32 caches: bit-exact against posenc_apply_rope (same source, float32).
 *  - Rejected calls: non-OK status, a non-empty posenc_last_error, and the outputs unchanged (memcmp).
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
#define MAX_LABELS 24
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
  /* FORMAT.md: double theta = p * w is off by up to 1.5 (p + 1) 2^-52 rad; y moves by that * |pair| * m. */
  angle_tol = 1.5 * ldexp((double)max_of(positions) + 1.0, -52) * sqrt(2.0) * fabs(m);
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
  }
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

/* ---- rejected calls ------------------------------------------------------------------------------------------ */

/* After a rejected call: a non-OK status, a message, and `out` as it was (`before`). */
static void expect_rejected(const char* what, posenc_status s, const void* out, const void* before, size_t size) {
  char msg[512];
  const size_t len = posenc_last_error(msg, sizeof msg);
  ++g_checks;
  if (s == POSENC_OK) failure("rejected %s: returned OK", what);
  else if (len == 0 || msg[0] == '\0') failure("rejected %s: status %s but posenc_last_error is empty", what, posenc_status_name(s));
  else if (memcmp(out, before, size) != 0) failure("rejected %s: output modified", what);
  else printf("  rejected %-28s %-17s \"%s\"\n", what, posenc_status_name(s), msg);
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

/* ---- main ---------------------------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
  static const char* files[] = {"rope_basic.txt", "rope_scaling.txt", "alibi.txt", "sinusoidal.txt", "t5.txt", "xpos.txt"};
  int f, i;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/golden directory>\n", argv[0]);
    return 2;
  }
  printf("golden_c: posenc %s, C API %d, ISA %s\n", posenc_version(), posenc_c_api_version(), posenc_active_isa());
  for (f = 0; f < 6; ++f) {
    gfile g;
    int run = 0;
    const long failures0 = g_failures;
    if (load_gfile(argv[1], files[f], &g) != 0) continue; /* counted as a failure */
    for (i = 0; i < g.n; ++i) {
      const gcase* c = &g.cases[i];
      ++run;
      if (f <= 1) rope_case(c);
      else if (f == 2 && (starts(c->name, "slopes_") || starts(c->name, "bias_"))) alibi_case(c);
      else if (f == 3) sinusoidal_case(c);
      else if (f == 4 && (starts(c->name, "boundary_") || starts(c->name, "table_"))) t5_case(c);
      else if (f == 5) xpos_case(c);
      else --run, printf("  %s: case %s not handled\n", files[f], c->name);
    }
    printf("%s: %d of %d cases run, %ld failures\n", files[f], run, g.n, g_failures - failures0);
    if (run == 0) failure("%s: no case run", files[f]);
    free_gfile(&g);
  }
  kv_append_check();
  printf("kv append (paged float32, plan and cache): done\n");
  rejected_calls(argv[1]);
  printf("max |error| and max |error| / tolerance per family:\n");
  for (i = 0; i < MAX_LABELS && g_max[i].label != NULL; ++i)
    printf("  %-34s %.3e  %.3f\n", g_max[i].label, g_max[i].err, g_max[i].ratio);
  printf("golden_c: %ld checks, %ld failures\n", g_checks, g_failures);
  return g_failures != 0;
}
