// posenc Python bindings: ALiBi: slopes, the bias tensor, adding it to scores.
#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ ALiBi

posenc::alibi_config alibi_cfg(index_t num_heads, double max_bias, index_t head_begin, index_t head_end,
                               const std::string& form, const char* fn, const std::string& arithmetic = "exact") {
  posenc::alibi_config cfg;
  cfg.num_heads = num_heads;
  cfg.max_bias = max_bias;
  cfg.head_begin = head_begin;
  cfg.head_end = head_end;
  cfg.form = parse_enum<posenc::alibi_form>(form, fn, "form");
  cfg.arithmetic = parse_enum<posenc::alibi_arithmetic>(arithmetic, fn, "arithmetic");
  return cfg;
}

void alibi_slopes(const rw_array& out, index_t num_heads, double max_bias, index_t head_begin, index_t head_end) {
  constexpr const char* fn = "alibi_slopes";
  const arr a = describe(out, fn, "out");
  if (a.ndim != 1) value_error(fn, "out must have shape (H_local,), got ", a.ndim, " dimensions");
  const posenc::alibi_config cfg = alibi_cfg(num_heads, max_bias, head_begin, head_end, "linear", fn);
  run([&] {
    return visit(float_dtype(a.dtype, fn, "out"), [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_alibi_slopes(cfg, view_of<T, 1>(a));
    });
  });
}

void alibi_bias(const rw_array& out, index_t num_heads, double max_bias, index_t head_begin, index_t head_end,
                const std::string& form, index_t query_offset, bool causal, const std::string& arithmetic) {
  constexpr const char* fn = "alibi_bias";
  const arr a = describe(out, fn, "out");
  if (a.ndim != 3) value_error(fn, "out must have shape (H_local, Lq, Lk), got ", a.ndim, " dimensions");
  const posenc::alibi_config cfg = alibi_cfg(num_heads, max_bias, head_begin, head_end, form, fn, arithmetic);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] {
    return visit(float_dtype(a.dtype, fn, "out"), [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_alibi_bias(cfg, view_of<T, 3>(a), posenc::positions::offset(query_offset), mask);
    });
  });
}

template <class F>
posenc::status with_scores(const arr& a, dt type, F&& f) {
  return visit(type, [&](auto tag) {
    using T = decltype(tag);
    return a.ndim == 4 ? f(view_of<T, 4>(a)) : f(view_of<T, 3>(a));
  });
}

void add_alibi_bias(const rw_array& scores, index_t num_heads, double max_bias, index_t head_begin, index_t head_end,
                    const std::string& form, const std::optional<ro_array>& positions, bool starts, index_t offset, bool causal,
                    const std::string& arithmetic) {
  constexpr const char* fn = "add_alibi_bias";
  const arr a = describe(scores, fn, "scores");
  if (a.ndim != 3 && a.ndim != 4) value_error(fn, "scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got ", a.ndim, " dimensions");
  const dt type = float_dtype(a.dtype, fn, "scores");
  const posenc::alibi_config cfg = alibi_cfg(num_heads, max_bias, head_begin, head_end, form, fn, arithmetic);
  const posenc::positions pos = make_positions(positions, starts, offset, a.ndim == 4 ? a.ext[0] : 1, fn);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] { return with_scores(a, type, [&](const auto& v) { return posenc::try_add_alibi_bias(cfg, v, pos, mask); }); });
}

void add_alibi_bias_slopes(const rw_array& scores, const ro_array& slopes, const std::string& form,
                           const std::optional<ro_array>& positions, bool starts, index_t offset, bool causal,
                           const std::string& arithmetic) {
  constexpr const char* fn = "add_alibi_bias";
  const arr a = describe(scores, fn, "scores");
  if (a.ndim != 3 && a.ndim != 4) value_error(fn, "scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got ", a.ndim, " dimensions");
  const dt type = float_dtype(a.dtype, fn, "scores");
  const arr s = describe(slopes, fn, "slopes");
  if (s.ndim != 1 && s.ndim != 2) value_error(fn, "slopes must have shape (H,) or (N, H), got ", s.ndim, " dimensions");
  const dt stype = float_dtype(s.dtype, fn, "slopes");
  const posenc::alibi_config fa = alibi_cfg(1, 8.0, 0, -1, form, fn, arithmetic);
  const posenc::alibi_form f = fa.form;
  const posenc::alibi_arithmetic ar = fa.arithmetic;
  const posenc::positions pos = make_positions(positions, starts, offset, a.ndim == 4 ? a.ext[0] : 1, fn);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] {
    return visit(stype, [&](auto stag) {
      using S = decltype(stag);
      return with_scores(a, type, [&](const auto& v) {
        return s.ndim == 1 ? posenc::try_add_alibi_bias(view_of<const S, 1>(s), v, pos, mask, f, ar)
                           : posenc::try_add_alibi_bias(view_of<const S, 2>(s), v, pos, mask, f, ar);
      });
    });
  });
}

}  // namespace

void bind_alibi(nb::module_& m) {
  m.def("alibi_slopes", &alibi_slopes, nb::arg("out").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"));
  m.def("alibi_bias", &alibi_bias, nb::arg("out").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"), nb::arg("form"), nb::arg("query_offset"), nb::arg("causal"),
        nb::arg("arithmetic"));
  m.def("add_alibi_bias", &add_alibi_bias, nb::arg("scores").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"), nb::arg("form"), nb::arg("positions").noconvert().none(), nb::arg("starts"),
        nb::arg("offset"), nb::arg("causal"), nb::arg("arithmetic"));
  m.def("add_alibi_bias_slopes", &add_alibi_bias_slopes, nb::arg("scores").noconvert(), nb::arg("slopes").noconvert(),
        nb::arg("form"), nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("causal"),
        nb::arg("arithmetic"));
}

}  // namespace pyposenc
