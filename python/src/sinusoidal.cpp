// posenc Python bindings: Sinusoidal encodings: the table, adding it, fairseq padded positions.
#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ sinusoidal

posenc::sinusoidal_config sin_cfg(index_t dim, double base, const std::string& style, std::optional<index_t> padding_idx,
                                  const char* fn) {
  posenc::sinusoidal_config cfg;
  cfg.dim = dim;
  cfg.base = base;
  cfg.layout = parse_enum<posenc::sinusoidal_layout>(style, fn, "style");
  cfg.padding_idx = padding_idx;
  return cfg;
}

void sinusoidal_table(const rw_array& out, index_t dim, double base, const std::string& style,
                      std::optional<index_t> padding_idx, index_t offset) {
  constexpr const char* fn = "sinusoidal_table";
  const arr a = describe(out, fn, "out");
  if (a.ndim != 2) value_error(fn, "out must have shape (L, D), got ", a.ndim, " dimensions");
  const posenc::sinusoidal_config cfg = sin_cfg(dim, base, style, padding_idx, fn);
  run([&] {
    return visit(float_dtype(a.dtype, fn, "out"), [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_sinusoidal_table(cfg, view_of<T, 2>(a), offset);
    });
  });
}

void add_sinusoidal(const ro_array& x, const rw_array& out, index_t dim, double base, const std::string& style,
                    std::optional<index_t> padding_idx, const std::optional<ro_array>& positions, bool starts, index_t offset) {
  constexpr const char* fn = "add_sinusoidal";
  const arr ax = describe(x, fn, "x");
  const arr ao = describe(out, fn, "out");
  if (ax.ndim != 2 && ax.ndim != 3) value_error(fn, "x must have shape (N, L, D) or (L, D), got ", ax.ndim, " dimensions");
  if (ao.ndim != ax.ndim) value_error(fn, "out has ", ao.ndim, " dimensions where x has ", ax.ndim);
  const dt tx = float_dtype(ax.dtype, fn, "x");
  if (float_dtype(ao.dtype, fn, "out") != tx)
    type_error(fn, "out (", dlpack_name(ao.dtype), ") must have x's dtype (", dlpack_name(ax.dtype), ")");
  const posenc::sinusoidal_config cfg = sin_cfg(dim, base, style, padding_idx, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, ax.ndim == 3 ? ax.ext[0] : 1, fn);
  run([&] {
    return visit(tx, [&](auto tag) {
      using T = decltype(tag);
      if (ax.data == ao.data && ax.ext == ao.ext && ax.str == ao.str) {  // out=x: in place, messages name x
        if (ax.ndim == 3) return posenc::try_add_sinusoidal(cfg, view_of<T, 3>(ao), pos);
        return posenc::try_add_sinusoidal(cfg, view_of<T, 2>(ao), pos);
      }
      if (ax.ndim == 3) return posenc::try_add_sinusoidal(cfg, view_of<const T, 3>(ax), view_of<T, 3>(ao), pos);
      return posenc::try_add_sinusoidal(cfg, view_of<const T, 2>(ax), view_of<T, 2>(ao), pos);
    });
  });
}

void make_padded_positions(const ro_array& tokens, const rw_array& out, index_t padding_idx, index_t past_length) {
  constexpr const char* fn = "make_padded_positions";
  const arr t = describe(tokens, fn, "tokens", 2);
  const arr o = describe(out, fn, "out", 2);
  if (t.ndim != 2 || o.ndim != 2 || t.ext != o.ext) value_error(fn, "tokens and out must both have shape (N, L)");
  std::int64_t* po = const_cast<std::int64_t*>(int64_data(o, fn, "out"));
  const bool i32 = is(t.dtype, nb::dlpack::dtype_code::Int, 32);
  if (!i32) int64_data(t, fn, "tokens");
  else if (t.ext[1] > 1 && t.str[1] != 1) value_error(fn, "tokens must be C-contiguous");
  if (i32 && t.ext[0] > 1 && t.str[0] != t.ext[1]) value_error(fn, "tokens must be C-contiguous");
  run([&] {
    return i32 ? posenc::try_make_padded_positions(static_cast<const std::int32_t*>(t.data), t.ext[0], t.ext[1], padding_idx,
                                                   po, past_length)
               : posenc::try_make_padded_positions(static_cast<const std::int64_t*>(t.data), t.ext[0], t.ext[1], padding_idx,
                                                   po, past_length);
  });
}

}  // namespace

void bind_sinusoidal(nb::module_& m) {
  m.def("sinusoidal_table", &sinusoidal_table, nb::arg("out").noconvert(), nb::arg("dim"), nb::arg("base"),
        nb::arg("style"), nb::arg("padding_idx").none(), nb::arg("offset"));
  m.def("add_sinusoidal", &add_sinusoidal, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("dim"),
        nb::arg("base"), nb::arg("style"), nb::arg("padding_idx").none(), nb::arg("positions").noconvert().none(), nb::arg("starts"),
        nb::arg("offset"));
  m.def("make_padded_positions", &make_padded_positions, nb::arg("tokens").noconvert(), nb::arg("out").noconvert(),
        nb::arg("padding_idx"), nb::arg("past_length"));
}

}  // namespace pyposenc
