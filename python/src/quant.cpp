// posenc Python bindings: RoPE fused with 8-bit quantisation (apply_rope_quantized, rope_append_kv_quantized) and
// the pair-layout conversions of tensors and q/k projection weights.
#include <posenc/quantize.hpp>

#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ 8-bit codes

/// An (N, L, H, D) code tensor: int8 for the int8 format, uint8 for fp8 (the bit patterns).
struct code4 {
  v4 v;
  bool int8 = true;
};

template <class Array>
code4 codes4(const Array& a, const std::string& layout, const char* fn, const char* name, posenc::quant_format f) {
  const arr d = describe(a, fn, name);
  using code = nb::dlpack::dtype_code;
  const bool want_int8 = f == posenc::quant_format::int8;
  if (want_int8 ? !is(d.dtype, code::Int, 8) : !is(d.dtype, code::UInt, 8))
    type_error(fn, name, " has dtype ", dlpack_name(d.dtype), "; format '", posenc::to_string(f), "' writes ",
               want_int8 ? "int8" : "uint8 (fp8 bit patterns)", " codes");
  return {to_nlhd(d, parse_layout(layout, d.ndim, fn, name), dt::f32), want_int8};
}

/// A quant_spec from a format name and optional given scales: (H,) per head, or (1,) / a 0-d array for the
/// whole tensor; float32, contiguous. No scales: dynamic (int8 only; posenc rejects it for fp8).
posenc::quant_spec spec_of(const std::string& format, const std::optional<ro_array>& scales, const char* fn,
                           const char* name) {
  posenc::quant_spec q;
  q.format = parse_enum<posenc::quant_format>(format, fn, "format");
  if (!scales) {
    q.scales = nullptr;
    return q;
  }
  const arr s = describe(*scales, fn, name, 1);
  if (!is(s.dtype, nb::dlpack::dtype_code::Float, 32)) type_error(fn, name, " have dtype ", dlpack_name(s.dtype), "; float32 is needed");
  q.scales = static_cast<const float*>(s.data);
  q.scale_stride = s.ndim == 0 || s.ext[0] == 1 ? 0 : s.str[0];
  return q;
}

/// The [N, L, H] float32 output of dynamic int8 scales, or an empty view.
posenc::strided_view<float, 3> scales_out(const std::optional<rw_array>& a, const char* fn, const char* name) {
  if (!a) return {};
  const arr s = describe(*a, fn, name, 3);
  if (s.ndim != 3) value_error(fn, name, " must have shape (N, L, H), got ", s.ndim, " dimensions");
  if (!is(s.dtype, nb::dlpack::dtype_code::Float, 32)) type_error(fn, name, " have dtype ", dlpack_name(s.dtype), "; float32 is needed");
  return view_of<float, 3>(s);
}

template <class F>
posenc::status visit_code(bool int8, F&& f) {
  if (int8) return f(std::int8_t{});
  return f(std::uint8_t{});
}

void apply_rope_quantized(const ro_array& x, const rw_array& codes, const std::optional<rw_array>& scales_output,
                          nb::handle freq, const std::optional<ro_array>& positions, bool starts, index_t offset,
                          const std::string& format, const std::optional<ro_array>& scales, const std::string& layout) {
  constexpr const char* fn = "apply_rope_quantized";
  const posenc::quant_spec spec = spec_of(format, scales, fn, "scales");
  const v4 vx = tensor4(x, layout, fn, "x");
  const code4 vc = codes4(codes, layout, fn, "codes", spec.format);
  const posenc::strided_view<float, 3> so = scales_out(scales_output, fn, "scales_out");
  const freq_ref f = get_freq(freq, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, vx.ext[0], fn);
  run([&] {
    return visit(vx.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit_code(vc.int8, [&](auto code_tag) {
        using C = decltype(code_tag);
        return visit_freq(f, [&](const auto& src) {
          return posenc::try_apply_rope_quantized(src, view4<const I>(vx), view4<C>(vc.v), so, pos, spec);
        });
      });
    });
  });
}

/// rope_append_kv into 8-bit caches [dim0, dim1, Hk, D] (contiguous by seq_lens, or paged by slot_mapping).
void rope_append_kv_quantized(const ro_array& k, const ro_array& v, const rw_array& k_cache, const rw_array& v_cache,
                              nb::handle freq, const std::optional<ro_array>& positions, bool starts, index_t offset,
                              const ro_array& slots, bool paged, const std::string& k_format,
                              const std::optional<ro_array>& k_scales, const std::string& v_format,
                              const std::optional<ro_array>& v_scales, const std::optional<rw_array>& k_scales_out,
                              const std::optional<rw_array>& v_scales_out, const std::string& layout) {
  constexpr const char* fn = "rope_append_kv_quantized";
  const posenc::quant_spec ks = spec_of(k_format, k_scales, fn, "k_scales");
  const posenc::quant_spec vs = spec_of(v_format, v_scales, fn, "v_scales");
  const v4 vk = tensor4(k, layout, fn, "k");
  const v4 vv = tensor4(v, layout, fn, "v");
  if (vv.type != vk.type) type_error(fn, "k and v must have one dtype (k has ", dlpack_name(k.dtype()), ")");
  const code4 ck = codes4(k_cache, "NLHD", fn, "k_cache", ks.format);
  const code4 cv = codes4(v_cache, "NLHD", fn, "v_cache", vs.format);
  const index_t n = vk.ext[0], l = vk.ext[1];
  const posenc::kv_slots where = kv_slots_of(slots, paged, n, l, fn);
  const posenc::strided_view<float, 3> kso = scales_out(k_scales_out, fn, "k_scales_out");
  const posenc::strided_view<float, 3> vso = scales_out(v_scales_out, fn, "v_scales_out");
  const freq_ref f = get_freq(freq, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, n, fn);
  run([&] {
    return visit(vk.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit_code(ck.int8, [&](auto kc_tag) {
        using KC = decltype(kc_tag);
        return visit_code(cv.int8, [&](auto vc_tag) {
          using VC = decltype(vc_tag);
          return visit_freq(f, [&](const auto& src) {
            return posenc::try_rope_append_kv_quantized(src, view4<const I>(vk), view4<const I>(vv), view4<KC>(ck.v),
                                                        view4<VC>(cv.v), pos, where, ks, vs, kso, vso);
          });
        });
      });
    });
  });
}

// ------------------------------------------------------------------------------------------------ layouts

void convert_rope_layout(const ro_array& x, const rw_array& out, index_t rotary_dim, index_t rotary_offset,
                         const std::string& from, const std::string& to, const std::string& layout) {
  constexpr const char* fn = "convert_rope_layout";
  const v4 vx = tensor4(x, layout, fn, "x");
  const v4 vo = tensor4(out, layout, fn, "out");
  if (vx.type != vo.type) type_error(fn, "out must have x's dtype (the conversion moves bits)");
  const posenc::rope_style f = parse_style(from, fn, "from"), t = parse_style(to, fn, "to");
  run([&] {
    return visit(vx.type, [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_convert_rope_layout(view4<const T>(vx), view4<T>(vo), rotary_dim, rotary_offset, f, t);
    });
  });
}

void convert_rope_weight_layout(const ro_array& w, const rw_array& out, index_t num_heads, index_t head_dim,
                                index_t rotary_dim, index_t rotary_offset, const std::string& from, const std::string& to) {
  constexpr const char* fn = "convert_rope_weight_layout";
  arr aw = describe(w, fn, "weight", 2);
  arr ao = describe(out, fn, "out", 2);
  if (aw.ndim == 1) aw.ndim = 2, aw.ext[1] = 1, aw.str[1] = 1;  // a bias: one column
  if (ao.ndim == 1) ao.ndim = 2, ao.ext[1] = 1, ao.str[1] = 1;
  const dt tw = float_dtype(aw.dtype, fn, "weight");
  if (float_dtype(ao.dtype, fn, "out") != tw) type_error(fn, "out must have the weight's dtype (the permutation moves bits)");
  const posenc::rope_style f = parse_style(from, fn, "from"), t = parse_style(to, fn, "to");
  run([&] {
    return visit(tw, [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_convert_rope_weight_layout(view_of<const T, 2>(aw), view_of<T, 2>(ao), num_heads, head_dim,
                                                    rotary_dim, rotary_offset, f, t);
    });
  });
}

}  // namespace

void bind_quant(nb::module_& m) {
  m.def("apply_rope_quantized", &apply_rope_quantized, nb::arg("x").noconvert(), nb::arg("codes").noconvert(),
        nb::arg("scales_out").noconvert().none(), nb::arg("plan"), nb::arg("positions").noconvert().none(),
        nb::arg("starts"), nb::arg("offset"), nb::arg("format"), nb::arg("scales").noconvert().none(), nb::arg("layout"));
  m.def("rope_append_kv_quantized", &rope_append_kv_quantized, nb::arg("k").noconvert(), nb::arg("v").noconvert(),
        nb::arg("k_cache").noconvert(), nb::arg("v_cache").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("slots").noconvert(),
        nb::arg("paged"), nb::arg("k_format"), nb::arg("k_scales").noconvert().none(), nb::arg("v_format"),
        nb::arg("v_scales").noconvert().none(), nb::arg("k_scales_out").noconvert().none(),
        nb::arg("v_scales_out").noconvert().none(), nb::arg("layout"));
  m.def("convert_rope_layout", &convert_rope_layout, nb::arg("x").noconvert(), nb::arg("out").noconvert(),
        nb::arg("rotary_dim"), nb::arg("rotary_offset"), nb::arg("from_style"), nb::arg("to_style"), nb::arg("layout"));
  m.def("convert_rope_weight_layout", &convert_rope_weight_layout, nb::arg("weight").noconvert(), nb::arg("out").noconvert(),
        nb::arg("num_heads"), nb::arg("head_dim"), nb::arg("rotary_dim"), nb::arg("rotary_offset"), nb::arg("from_style"),
        nb::arg("to_style"));
}

}  // namespace pyposenc
