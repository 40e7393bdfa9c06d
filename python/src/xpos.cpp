// posenc Python bindings: xPos: XposPlanCore, apply_xpos, apply_xpos_qk.
#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ xPos

void apply_xpos(const ro_array& x, const rw_array& out, const xpos_plan_py& plan, const std::optional<ro_array>& positions,
                bool starts, index_t offset, std::optional<index_t> center, bool downscale, bool inverse, const std::string& layout) {
  constexpr const char* fn = "apply_xpos";
  const v4 vx = tensor4(x, layout, fn, "x");
  const v4 vo = tensor4(out, layout, fn, "out");
  const posenc::positions pos = make_positions(positions, starts, offset, vx.ext[0], fn);
  if (!center && positions) value_error(fn, "center is required with explicit positions (torchscale's default needs an offset)");
  // torchscale XPOS.forward: centre ceil((L + offset)/2) for a call on L tokens after `offset` cached ones.
  const index_t c = center ? *center : (offset >= 0 ? posenc::xpos_default_center(vx.ext[1], offset) : 0);
  const posenc::xpos_mode mode = downscale ? posenc::xpos_mode::downscale : posenc::xpos_mode::upscale;
  if (inverse && !same_tensor(vx, vo)) value_error(fn, "inverse=True works in place: x and out must be one tensor");
  run([&] {
    return visit_in_out(vx, vo, [&](auto in_tag, auto out_tag) {
      using I = decltype(in_tag);
      using O = decltype(out_tag);
      if constexpr (std::is_same_v<I, O>) {
        if (inverse) return posenc::try_apply_xpos_backward(plan.plan, view4<O>(vo), pos, c, mode);
        if (same_tensor(vx, vo)) return posenc::try_apply_xpos(plan.plan, view4<O>(vo), pos, c, mode);
      }
      return posenc::try_apply_xpos(plan.plan, view4<const I>(vx), view4<O>(vo), pos, c, mode);
    });
  });
}

void apply_xpos_qk(const rw_array& q, const rw_array& k, const xpos_plan_py& plan, const std::optional<ro_array>& positions,
                   bool starts, index_t offset, std::optional<index_t> center, const std::string& layout) {
  constexpr const char* fn = "apply_xpos_qk";
  const v4 vq = tensor4(q, layout, fn, "q");
  const v4 vk = tensor4(k, layout, fn, "k");
  if (vq.type != vk.type)
    type_error(fn, "q (", dlpack_name(q.dtype()), ") and k (", dlpack_name(k.dtype()), ") must have one dtype");
  const posenc::positions pos = make_positions(positions, starts, offset, vq.ext[0], fn);
  if (!center && positions) value_error(fn, "center is required with explicit positions");
  const index_t c = center ? *center : (offset >= 0 ? posenc::xpos_default_center(vq.ext[1], offset) : 0);
  run([&] {
    return visit(vq.type, [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_apply_xpos_qk(plan.plan, view4<T>(vq), view4<T>(vk), pos, c);
    });
  });
}

}  // namespace

void bind_xpos(nb::module_& m) {
  nb::class_<xpos_plan_py>(m, "XposPlanCore", "A posenc::xpos_plan.")
      .def(
          "__init__",
          [](xpos_plan_py* self, index_t head_dim, double scale_base, double gamma, double base, const std::string& style) {
            posenc::xpos_config cfg;
            cfg.head_dim = head_dim;
            cfg.scale_base = scale_base;
            cfg.gamma = gamma;
            cfg.base = base;
            cfg.style = parse_style(style, "XposPlan");
            posenc::xpos_plan p;
            check(posenc::xpos_plan::try_create(cfg, p));
            new (self) xpos_plan_py{std::move(p)};
          },
          nb::arg("head_dim"), nb::arg("scale_base"), nb::arg("gamma"), nb::arg("base"), nb::arg("style"))
      .def_prop_ro("head_dim", [](const xpos_plan_py& p) { return p.plan.head_dim(); })
      .def_prop_ro("scale_base", [](const xpos_plan_py& p) { return p.plan.config().scale_base; })
      .def_prop_ro("gamma", [](const xpos_plan_py& p) { return p.plan.config().gamma; })
      .def_prop_ro("base", [](const xpos_plan_py& p) { return p.plan.config().base; })
      .def_prop_ro("style", [](const xpos_plan_py& p) { return std::string(posenc::to_string(p.plan.config().style)); })
      .def_prop_ro("inv_freq", [](const xpos_plan_py& p) {
        return ro_view<double, 1>(p.plan.inv_freq().data(), {p.plan.inv_freq().size()}, nb::find(&p));
      })
      .def_prop_ro("log_zeta", [](const xpos_plan_py& p) {
        return ro_view<double, 1>(p.plan.log_zeta().data(), {p.plan.log_zeta().size()}, nb::find(&p));
      })
      .def("max_safe_distance", [](const xpos_plan_py& p, const std::string& dtype) {
        if (dtype == "float32" || dtype == "bfloat16") return p.plan.max_safe_distance<float>();
        if (dtype == "float64") return p.plan.max_safe_distance<double>();
        if (dtype == "float16") {
          // Eigen::half's normal range (posenc/xpos_plan.hpp): max 65504, min 2^-14.
          const double l = std::min(std::log(65504.0), -std::log(std::ldexp(1.0, -14)));
          return p.plan.empty() ? 0.0 : p.plan.config().scale_base * l / -p.plan.log_zeta().front();
        }
        value_error("XposPlan.max_safe_distance", "dtype='", dtype, "' is not float32, float64, float16 or bfloat16");
      }, nb::arg("dtype"));

  m.def("apply_xpos", &apply_xpos, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("center").none(), nb::arg("downscale"),
        nb::arg("inverse"), nb::arg("layout"));
  m.def("apply_xpos_qk", &apply_xpos_qk, nb::arg("q").noconvert(), nb::arg("k").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("center").none(), nb::arg("layout"));
}

}  // namespace pyposenc
