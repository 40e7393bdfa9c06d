// posenc Python bindings: Multimodal RoPE: MropePlanCore and apply_mrope.
#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ MRoPE

posenc::mrope_positions make_mrope_positions(const ro_array& ids, const char* fn) {
  const arr a = describe(ids, fn, "positions", 3);
  const std::int64_t* p = int64_data(a, fn, "positions");
  if (a.ndim == 2 && a.ext[0] == 3) return posenc::mrope_positions::shared(p, a.ext[1]);
  if (a.ndim == 3 && a.ext[1] == 3) return posenc::mrope_positions::per_token(p, a.ext[0], a.ext[2]);
  value_error(fn, "MRoPE positions must have shape (3, L) (shared by the batch) or (N, 3, L): (t, h, w) per token");
}

/// MRoPE: forward out of place (out may be x), inverse in place on out (the caller copies x there first).
void apply_mrope(const ro_array& x, const rw_array& out, const mrope_plan_py& plan, const ro_array& positions,
                 bool inverse, const std::string& layout) {
  constexpr const char* fn = "apply_mrope";
  const v4 vx = tensor4(x, layout, fn, "x");
  const v4 vo = tensor4(out, layout, fn, "out");
  const posenc::mrope_positions pos = make_mrope_positions(positions, fn);
  if (inverse && !same_tensor(vx, vo)) value_error(fn, "inverse=True works in place: x and out must be one tensor");
  run([&] {
    return visit_in_out(vx, vo, [&](auto in_tag, auto out_tag) {
      using I = decltype(in_tag);
      using O = decltype(out_tag);
      if constexpr (std::is_same_v<I, O>) {
        if (inverse) return posenc::try_apply_mrope_backward(plan.plan, view4<O>(vo), pos);
        if (same_tensor(vx, vo)) return posenc::try_apply_mrope(plan.plan, view4<O>(vo), pos);
      }
      return posenc::try_apply_mrope(plan.plan, view4<const I>(vx), view4<O>(vo), pos);
    });
  });
}

}  // namespace

void bind_mrope(nb::module_& m) {
  nb::class_<mrope_plan_py>(m, "MropePlanCore", "A posenc::mrope_plan.")
      .def(
          "__init__",
          [](mrope_plan_py* self, const rope_plan_py& plan, std::array<index_t, 3> sections, const std::string& layout) {
            const auto l = parse_enum<posenc::mrope_layout>(layout, "MropePlan", "layout");
            posenc::mrope_plan p;
            check(posenc::mrope_plan::try_create(plan.plan, sections, l, p));
            new (self) mrope_plan_py{std::move(p)};
          },
          nb::arg("plan"), nb::arg("sections"), nb::arg("layout"))
      .def_prop_ro("sections", [](const mrope_plan_py& p) { return p.plan.sections(); })
      .def_prop_ro("layout", [](const mrope_plan_py& p) {
        return std::string(posenc::to_string(p.plan.layout()));
      })
      .def_prop_ro("plan", [](const mrope_plan_py& p) { return rope_plan_py{p.plan.plan(), std::nullopt, 0}; })
      .def_prop_ro("axis", [](const mrope_plan_py& p) {
        return ro_view<std::uint8_t, 1>(p.plan.axis().data(), {p.plan.axis().size()}, nb::find(&p));
      });

  m.def("apply_mrope", &apply_mrope, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert(), nb::arg("inverse"), nb::arg("layout"));
}

}  // namespace pyposenc
