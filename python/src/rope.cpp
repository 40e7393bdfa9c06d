// posenc Python bindings: RoPE operations: apply_rope, apply_rope_qk, the fused KV-cache append, shift_rope, rerotate_rope.
#include "common.hpp"

namespace pyposenc {
namespace {

// ------------------------------------------------------------------------------------------------ RoPE

void apply_rope(const ro_array& x, const rw_array& out, nb::handle freq, const std::optional<ro_array>& positions,
                bool starts, index_t offset, bool inverse, const std::string& layout) {
  constexpr const char* fn = "apply_rope";
  const v4 vx = tensor4(x, layout, fn, "x");
  const v4 vo = tensor4(out, layout, fn, "out");
  const freq_ref f = get_freq(freq, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, vx.ext[0], fn);
  const bool in_place = same_tensor(vx, vo);
  run([&] {
    return visit_in_out(vx, vo, [&](auto in_tag, auto out_tag) {
      using I = decltype(in_tag);
      using O = decltype(out_tag);
      const auto o = view4<O>(vo);
      return visit_freq(f, [&](const auto& src) {
        if constexpr (std::is_same_v<I, O>) {  // out=x: the in-place form, whose messages name x
          if (in_place) return inverse ? posenc::try_apply_rope_backward(src, o, pos) : posenc::try_apply_rope(src, o, pos);
        }
        const auto in = view4<const I>(vx);
        return inverse ? posenc::try_apply_rope_backward(src, in, o, pos) : posenc::try_apply_rope(src, in, o, pos);
      });
    });
  });
}

void apply_rope_qk(const rw_array& q, const rw_array& k, nb::handle freq, const std::optional<ro_array>& positions,
                   bool starts, index_t offset, const std::string& layout) {
  constexpr const char* fn = "apply_rope_qk";
  const v4 vq = tensor4(q, layout, fn, "q");
  const v4 vk = tensor4(k, layout, fn, "k");
  if (vq.type != vk.type)
    type_error(fn, "q (", dlpack_name(q.dtype()), ") and k (", dlpack_name(k.dtype()), ") must have one dtype");
  const freq_ref f = get_freq(freq, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, vq.ext[0], fn);
  run([&] {
    return visit(vq.type, [&](auto tag) {
      using T = decltype(tag);
      const auto qv = view4<T>(vq);
      const auto kv = view4<T>(vk);
      return visit_freq(f, [&](const auto& src) { return posenc::try_apply_rope_qk(src, qv, kv, pos); });
    });
  });
}

/// posenc::rope_append_kv (q absent) or rope_qk_append_kv: k rotated into its cache slots and v copied next to
/// it, one rounding to the cache's dtype; `slots` is the cached length per sequence (contiguous cache
/// [B, max_len, Hk, D]) or the slot per token (paged cache [num_blocks, block_size, Hk, D], -1 skipped).
/// k and v share a dtype, and so do the two caches (q is k's dtype): the instantiations stay one per pair.
void rope_append_kv(const std::optional<rw_array>& q, const ro_array& k, const ro_array& v, const rw_array& k_cache,
                    const rw_array& v_cache, nb::handle freq, const std::optional<ro_array>& positions, bool starts, index_t offset,
                    const ro_array& slots, bool paged, const std::string& layout) {
  const char* fn = q ? "rope_qk_append_kv" : "rope_append_kv";
  const v4 vk = tensor4(k, layout, fn, "k");
  const v4 vv = tensor4(v, layout, fn, "v");
  const v4 vkc = tensor4(k_cache, "NLHD", fn, "k_cache");
  const v4 vvc = tensor4(v_cache, "NLHD", fn, "v_cache");
  std::optional<v4> vq;
  if (q) vq = tensor4(*q, layout, fn, "q");
  if (vv.type != vk.type || (vq && vq->type != vk.type))
    type_error(fn, "q, k and v must have one dtype (k has ", dlpack_name(k.dtype()), ")");
  if (vvc.type != vkc.type)
    type_error(fn, "k_cache (", dlpack_name(k_cache.dtype()), ") and v_cache (", dlpack_name(v_cache.dtype()),
               ") must have one dtype");
  const index_t n = vk.ext[0], l = vk.ext[1];
  const posenc::kv_slots where = kv_slots_of(slots, paged, n, l, fn);
  const freq_ref f = get_freq(freq, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, n, fn);
  run([&] {
    return visit(vk.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit(vkc.type, [&](auto cache_tag) {
        using C = decltype(cache_tag);
        const auto ki = view4<const I>(vk), vi = view4<const I>(vv);
        const auto kc = view4<C>(vkc), vc = view4<C>(vvc);
        return visit_freq(f, [&](const auto& src) {
          if (vq) return posenc::try_rope_qk_append_kv(src, view4<I>(*vq), ki, vi, kc, vc, pos, where);
          return posenc::try_rope_append_kv(src, ki, vi, kc, vc, pos, where);
        });
      });
    });
  });
}

void shift_rope(const rw_array& k, const rope_plan_py& plan, index_t delta, const std::optional<ro_array>& deltas,
                const std::string& layout) {
  constexpr const char* fn = "shift_rope";
  const v4 vk = tensor4(k, layout, fn, "k");
  const std::int64_t* per_token = nullptr;
  index_t rows = 0, cols = 0;
  if (deltas) {
    const arr d = describe(*deltas, fn, "deltas", 2);
    if (d.ndim != 2) value_error(fn, "deltas must have shape (N, L), got ", d.ndim, " dimensions");
    if (delta != 0) value_error(fn, "delta=", delta, " must be 0 when per-token deltas are given");
    per_token = int64_data(d, fn, "deltas");
    rows = d.ext[0];
    cols = d.ext[1];
  }
  run([&] {
    return visit(vk.type, [&](auto tag) {
      using T = decltype(tag);
      const auto kv = view4<T>(vk);
      return deltas ? posenc::try_shift_rope(plan.plan, kv, per_token, rows, cols)
                    : posenc::try_shift_rope(plan.plan, kv, delta);
    });
  });
}

void rerotate_rope(const rw_array& k, const rope_plan_py& from, const rope_plan_py& to,
                   const std::optional<ro_array>& positions, bool starts, index_t offset, const std::string& layout) {
  constexpr const char* fn = "rerotate_rope";
  const v4 vk = tensor4(k, layout, fn, "k");
  const posenc::positions pos = make_positions(positions, starts, offset, vk.ext[0], fn);
  run([&] {
    return visit(vk.type, [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_rerotate_rope(from.plan, to.plan, view4<T>(vk), pos);
    });
  });
}

}  // namespace

void bind_rope(nb::module_& m) {
  m.def("apply_rope", &apply_rope, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("inverse"), nb::arg("layout"));
  m.def("apply_rope_qk", &apply_rope_qk, nb::arg("q").noconvert(), nb::arg("k").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("layout"));
  m.def("rope_append_kv", &rope_append_kv, nb::arg("q").noconvert().none(), nb::arg("k").noconvert(),
        nb::arg("v").noconvert(), nb::arg("k_cache").noconvert(), nb::arg("v_cache").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("slots").noconvert(), nb::arg("paged"),
        nb::arg("layout"));
  m.def("shift_rope", &shift_rope, nb::arg("k").noconvert(), nb::arg("plan"), nb::arg("delta"),
        nb::arg("deltas").noconvert().none(), nb::arg("layout"));
  m.def("rerotate_rope", &rerotate_rope, nb::arg("k").noconvert(), nb::arg("from_plan"), nb::arg("to_plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("layout"));
}

}  // namespace pyposenc
