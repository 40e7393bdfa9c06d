// posenc Python bindings, shared by every binder (module.cpp, plans.cpp, rope.cpp, mrope.cpp, xpos.cpp,
// alibi.cpp, sinusoidal.cpp, t5.cpp): errors as Python exceptions, enum names, arrays as posenc views (layouts,
// dtypes), positions by keyword, and the plan types the binders pass between them. See module.cpp for the
// layer's rules (zero-copy, the GIL released, nothing written on rejected input).
#pragma once
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <posenc/alibi.hpp>
#include <posenc/dispatch.hpp>
#include <posenc/io/gguf.hpp>
#include <posenc/kv_cache.hpp>
#include <posenc/mrope.hpp>
#include <posenc/t5_bias.hpp>
#include <posenc/rope.hpp>
#include <posenc/rope_ops.hpp>
#include <posenc/rope_params.hpp>
#include <posenc/sinusoidal.hpp>
#include <posenc/version.hpp>
#include <posenc/xpos.hpp>

namespace nb = nanobind;
using posenc::index_t;

// The 16-bit element types of the arrays, declared to posenc through its public customisation point
// (posenc/storage.hpp): posenc reads and writes their bits and never calls an operator on them.
namespace pyposenc {
struct half_bits {
  std::uint16_t bits;
};
struct bfloat16_bits {
  std::uint16_t bits;
};
}  // namespace pyposenc

template <>
struct posenc::storage_traits<pyposenc::half_bits> {
  static constexpr posenc::storage_format format = posenc::storage_format::f16;
};
template <>
struct posenc::storage_traits<pyposenc::bfloat16_bits> {
  static constexpr posenc::storage_format format = posenc::storage_format::bf16;
};

namespace pyposenc {

using A4 = std::array<index_t, 4>;

// ------------------------------------------------------------------------------------------------ errors

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

[[noreturn]] inline void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

/// A binding-level rejection, worded like posenc's: "posenc.<fn>: <parts>".
template <class... Parts>
[[noreturn]] void value_error(const char* fn, const Parts&... parts) {
  raise(PyExc_ValueError, cat("posenc.", fn, ": ", parts...));
}
template <class... Parts>
[[noreturn]] void type_error(const char* fn, const Parts&... parts) {
  raise(PyExc_TypeError, cat("posenc.", fn, ": ", parts...));
}

/// A posenc status as a Python exception with the status's message.
inline void check(const posenc::status& s) {
  if (s.ok()) return;
  const std::string message(s.message());
  switch (s.code()) {
    case posenc::errc::io_error: raise(PyExc_OSError, message);
    case posenc::errc::out_of_memory: raise(PyExc_MemoryError, message);
    case posenc::errc::device_error: raise(PyExc_RuntimeError, message);
    default: raise(PyExc_ValueError, message);
  }
}

/// Runs a posenc call without the GIL and raises its status. The call only touches memory the caller's
/// arguments keep alive (the argument tuple holds them for the whole call).
template <class F>
void run(F&& f) {
  posenc::status s;
  {
    nb::gil_scoped_release unlocked;
    s = f();
  }
  check(s);
}

// ------------------------------------------------------------------------------------------------ names


/// Any public enum from its name, through posenc's one spelling table (posenc/enum_names.hpp: '-' or '_', any
/// case); a ValueError listing the accepted names otherwise.
template <class E>
E parse_enum(const std::string& s, const char* fn, const char* what) {
  E e{};
  if (!posenc::parse(s, e)) value_error(fn, what, "='", s, "' is not one of: ", posenc::enum_choices<E>().c_str());
  return e;
}

inline posenc::rope_style parse_style(const std::string& s, const char* fn, const char* what = "style") {
  return parse_enum<posenc::rope_style>(s, fn, what);
}

// ------------------------------------------------------------------------------------------------ arrays

/// The floating-point element types posenc computes on.
enum class dt { f32, f64, f16, bf16 };

inline std::string dlpack_name(const nb::dlpack::dtype& t) {
  using code = nb::dlpack::dtype_code;
  const char* kind = "unknown";
  switch (static_cast<code>(t.code)) {
    case code::Int: kind = "int"; break;
    case code::UInt: kind = "uint"; break;
    case code::Float: kind = "float"; break;
    case code::Bfloat: kind = "bfloat"; break;
    case code::Complex: kind = "complex"; break;
    case code::Bool: return "bool";
    default: break;
  }
  return cat(kind, static_cast<int>(t.bits), t.lanes != 1 ? cat("x", static_cast<int>(t.lanes)) : std::string());
}

inline bool is(const nb::dlpack::dtype& t, nb::dlpack::dtype_code c, int bits) {
  return t.code == static_cast<std::uint8_t>(c) && t.bits == bits && t.lanes == 1;
}

inline dt float_dtype(const nb::dlpack::dtype& t, const char* fn, const char* name) {
  using code = nb::dlpack::dtype_code;
  if (is(t, code::Float, 32)) return dt::f32;
  if (is(t, code::Float, 64)) return dt::f64;
  if (is(t, code::Float, 16)) return dt::f16;
  if (is(t, code::Bfloat, 16)) return dt::bf16;
  type_error(fn, name, " has dtype ", dlpack_name(t), "; posenc takes float32, float64, float16 or bfloat16");
}

/// An array as posenc sees it: data, element type, extents and element strides (rank <= 4).
struct arr {
  void* data = nullptr;
  std::size_t ndim = 0;
  A4 ext{};
  A4 str{};
  nb::dlpack::dtype dtype{};
};

template <class Array>
arr describe(const Array& a, const char* fn, const char* name, std::size_t max_rank = 4) {
  if (a.device_type() != nb::device::cpu::value)
    value_error(fn, name, " is not in CPU memory (DLPack device type ", a.device_type(),
                "); these bindings run posenc's CPU kernels only");
  if (a.ndim() > max_rank) value_error(fn, name, " has ", a.ndim(), " dimensions; at most ", max_rank, " are supported");
  arr r;
  r.data = const_cast<void*>(static_cast<const void*>(a.data()));
  r.ndim = a.ndim();
  r.dtype = a.dtype();
  for (std::size_t d = 0; d < a.ndim(); ++d) {
    r.ext[d] = static_cast<index_t>(a.shape(d));
    r.str[d] = a.stride(d);
  }
  return r;
}

/// "(a, b)", the shape as NumPy prints it, for messages.
inline std::string shape_str(const arr& a) {
  std::string r = "(";
  for (std::size_t d = 0; d < a.ndim; ++d) r += std::to_string(a.ext[d]) + (a.ndim == 1 ? "," : d + 1 < a.ndim ? ", " : "");
  return r + ")";
}

/// Calls f(T{}) with T the posenc storage type of `d`.
template <class F>
posenc::status visit(dt d, F&& f) {
  switch (d) {
    case dt::f32: return f(float{});
    case dt::f64: return f(double{});
    case dt::f16: return f(half_bits{});
    case dt::bf16: return f(bfloat16_bits{});
  }
  return {};
}

template <class T, std::size_t R>
posenc::strided_view<T, R> view_of(const arr& a) {
  std::array<index_t, R> e{}, s{};
  for (std::size_t d = 0; d < R; ++d) {
    e[d] = a.ext[d];
    s[d] = a.str[d];
  }
  return posenc::strided_view<T, R>(static_cast<T*>(a.data), e, s);
}

// ------------------------------------------------------------------------------------------------ layouts

/// posenc::layout by name (posenc::parse: any case); the default by rank, 4 -> NLHD and 2 -> LD, rank 3 named.
inline posenc::layout parse_layout(const std::string& name, std::size_t ndim, const char* fn, const char* arg) {
  if (name.empty()) {
    if (ndim == 4) return posenc::layout::nlhd;
    if (ndim == 2) return posenc::layout::ld;
    if (ndim == 3)
      value_error(fn, arg, " has 3 dimensions: name its layout, layout='LHD' (L, H, D) or layout='NLD' (N, L, D)");
    value_error(fn, arg, " has ", ndim, " dimensions; (N, L, H, D) tensors have 4 (or 3 or 2 with a layout)");
  }
  const auto l = parse_enum<posenc::layout>(name, fn, "layout");
  const std::size_t rank = l == posenc::layout::nlhd || l == posenc::layout::nhld ? 4 : l == posenc::layout::ld ? 2 : 3;
  if (ndim != rank) value_error(fn, arg, " has ", ndim, " dimensions; layout '", name, "' needs ", rank);
  return l;
}

/// The (N, L, H, D) view of an array in a layout: posenc::as_nlhd's permutation of the array's own strides.
struct v4 {
  void* data = nullptr;
  A4 ext{};
  A4 str{};
  dt type = dt::f32;
};

template <std::size_t R>
v4 nlhd_of(const arr& a, posenc::layout l, dt type) {
  std::array<index_t, R> e{}, s{};
  for (std::size_t d = 0; d < R; ++d) e[d] = a.ext[d], s[d] = a.str[d];
  // The element type only carries the pointer here: extents and strides are in elements of the array's dtype.
  const auto view = posenc::as_nlhd(posenc::strided_view<char, R>(static_cast<char*>(a.data), e, s), l);
  return v4{a.data, view.extents(), view.strides(), type};
}

inline v4 to_nlhd(const arr& a, posenc::layout l, dt type) {
  if (a.ndim == 4) return nlhd_of<4>(a, l, type);
  if (a.ndim == 3) return nlhd_of<3>(a, l, type);
  return nlhd_of<2>(a, l, type);
}

template <class Array>
v4 tensor4(const Array& a, const std::string& layout, const char* fn, const char* name) {
  const arr d = describe(a, fn, name);
  return to_nlhd(d, parse_layout(layout, d.ndim, fn, name), float_dtype(d.dtype, fn, name));
}

/// Whether two (N, L, H, D) views are one tensor (the in-place form of an out-of-place call).
inline bool same_tensor(const v4& a, const v4& b) {
  return a.data == b.data && a.ext == b.ext && a.str == b.str && a.type == b.type;
}

template <class T>
posenc::strided_view<T, 4> view4(const v4& v) {
  return posenc::strided_view<T, 4>(static_cast<T*>(v.data), v.ext, v.str);
}

/// f(I{}, O{}) with I and O the storage types of an input and an output tensor (every dtype pair).
template <class F>
posenc::status visit_in_out(const v4& in, const v4& out, F&& f) {
  return visit(in.type, [&](auto in_tag) { return visit(out.type, [&](auto out_tag) { return f(in_tag, out_tag); }); });
}

// ------------------------------------------------------------------------------------------------ positions

using ro_array = nb::ndarray<nb::ro>;
using rw_array = nb::ndarray<>;

/// The positions of a call over a batch of N sequences, each meaning named by its keyword (never guessed from a
/// shape): no ids: positions::offset(offset); `starts` (is_starts): one start per sequence, shape (N,),
/// positions::per_sequence; `positions`: one id per token, shape (N, L), or (L,) / (1, L) broadcast over the
/// batch (as HF position_ids), positions::per_token. int32 or int64, the last dimension contiguous; posenc
/// checks L and the values.
inline posenc::positions make_positions(const std::optional<ro_array>& ids, bool is_starts, index_t offset, index_t batch,
                                 const char* fn) {
  if (!ids) return posenc::positions::offset(offset);
  const char* name = is_starts ? "starts" : "positions";
  const arr a = describe(*ids, fn, name, 2);
  if (offset != 0)
    value_error(fn, "offset=", offset, " must be 0 when ", name, " are given (add it to the ", name, " instead)");
  using code = nb::dlpack::dtype_code;
  const bool i64 = is(a.dtype, code::Int, 64);
  if (!i64 && !is(a.dtype, code::Int, 32))
    type_error(fn, name, " have dtype ", dlpack_name(a.dtype), "; int64 or int32 is needed");
  if (is_starts) {
    if (a.ndim != 1 || a.ext[0] != batch)
      value_error(fn, "starts (one start per sequence) must have shape (N,) = (", batch, ",), got ", shape_str(a));
    if (a.ext[0] > 1 && a.str[0] != 1) value_error(fn, "starts must be contiguous");
    return i64 ? posenc::positions::per_sequence(static_cast<const std::int64_t*>(a.data), a.ext[0])
               : posenc::positions::per_sequence(static_cast<const std::int32_t*>(a.data), a.ext[0]);
  }
  const bool broadcast = a.ndim == 1 || (a.ndim == 2 && a.ext[0] == 1);
  if (!broadcast && !(a.ndim == 2 && a.ext[0] == batch))
    value_error(fn, "positions (one id per token) must have shape (L,), (1, L) or (N, L) with N=", batch, ", got ",
                shape_str(a), " (one start per sequence goes through starts=)");
  const index_t len = a.ext[a.ndim - 1];
  if (len > 1 && a.str[a.ndim - 1] != 1) value_error(fn, "positions must be contiguous along L");
  if (!broadcast && a.str[0] < 0) value_error(fn, "positions have a negative row stride ", a.str[0]);
  const index_t row = broadcast ? 0 : (a.ext[0] > 1 ? a.str[0] : len);
  return i64 ? posenc::positions::per_token(static_cast<const std::int64_t*>(a.data), batch, len, row)
             : posenc::positions::per_token(static_cast<const std::int32_t*>(a.data), batch, len, row);
}

/// A C-contiguous int64 array's data (positions of MRoPE, per-token deltas), checked for shape rank.
inline const std::int64_t* int64_data(const arr& a, const char* fn, const char* name) {
  if (!is(a.dtype, nb::dlpack::dtype_code::Int, 64)) type_error(fn, name, " have dtype ", dlpack_name(a.dtype), "; int64 is needed");
  index_t expect = 1;
  for (std::size_t d = a.ndim; d-- > 0;) {
    if (a.ext[d] > 1 && a.str[d] != expect) value_error(fn, name, " must be C-contiguous");
    expect *= a.ext[d];
  }
  return static_cast<const std::int64_t*>(a.data);
}

/// Where the N x L tokens of a KV-cache append go: `slots` is seq_lens (N,) of a contiguous cache, or the
/// slot_mapping ((N, L) or (N*L,)) of a paged one; int64, C-contiguous; posenc checks the values.
inline posenc::kv_slots kv_slots_of(const ro_array& slots, bool paged, index_t n, index_t l, const char* fn) {
  const char* name = paged ? "slot_mapping" : "seq_lens";
  const arr sl = describe(slots, fn, name, 2);
  const std::int64_t* data = int64_data(sl, fn, name);
  const index_t count = sl.ndim == 2 ? sl.ext[0] * sl.ext[1] : sl.ext[0];
  if (paged && count != n * l) value_error(fn, "slot_mapping has ", count, " slots for N * L = ", n * l, " tokens");
  return paged ? posenc::kv_slots::paged(data, sl.ndim == 2 ? sl.ext[0] : n, l) : posenc::kv_slots::contiguous(data, sl.ext[0]);
}

// ------------------------------------------------------------------------------------------------ plans

/// A rope_plan and, when it was built from one, its rope_config (so it can be rebuilt for another length).
struct rope_plan_py {
  posenc::rope_plan plan;
  std::optional<posenc::rope_config> config;
  index_t seq_len = 0;
};

struct rope_cache_py {
  std::variant<posenc::rope_cache<float>, posenc::rope_cache<double>> cache;
  const posenc::rope_plan& plan() const {
    return std::visit([](const auto& c) -> const posenc::rope_plan& { return c.plan(); }, cache);
  }
  index_t max_positions() const {
    return std::visit([](const auto& c) { return c.max_positions(); }, cache);
  }
};

struct xpos_plan_py {
  posenc::xpos_plan plan;
};

struct mrope_plan_py {
  posenc::mrope_plan plan;
};

/// An engine's own cos/sin table (posenc::rope_table_view of any storage type): pointers and strides into the
/// caller's arrays, which `keep` holds alive.
struct rope_table_py {
  const void* cos = nullptr;
  const void* sin = nullptr;
  dt type = dt::f32;
  index_t max_positions = 0;
  index_t row_stride = 0;
  index_t pair_stride = 1;
  posenc::rope_geometry geometry;
  nb::object keep;
};

/// The frequency source of a RoPE call: a plan (angles in double per call), a cache (table lookup) or an
/// engine's table.
struct freq_ref {
  const posenc::rope_plan* plan = nullptr;
  const posenc::rope_cache<float>* c32 = nullptr;
  const posenc::rope_cache<double>* c64 = nullptr;
  const rope_table_py* table = nullptr;
};

inline freq_ref get_freq(nb::handle h, const char* fn, const char* name = "plan") {
  freq_ref r;
  if (nb::isinstance<rope_plan_py>(h)) {
    r.plan = &nb::cast<const rope_plan_py&>(h).plan;
  } else if (nb::isinstance<rope_cache_py>(h)) {
    const auto& c = nb::cast<const rope_cache_py&>(h).cache;
    if (const auto* f = std::get_if<posenc::rope_cache<float>>(&c)) r.c32 = f;
    else r.c64 = &std::get<posenc::rope_cache<double>>(c);
  } else if (nb::isinstance<rope_table_py>(h)) {
    r.table = &nb::cast<const rope_table_py&>(h);
  } else {
    type_error(fn, name, " must be a posenc.RopePlan, RopeCache or RopeTable, got ",
               nb::cast<std::string>(nb::type_name(h.type())));
  }
  return r;
}

template <class F>
posenc::status visit_freq(const freq_ref& r, F&& f) {
  if (r.plan != nullptr) return f(*r.plan);
  if (r.c32 != nullptr) return f(*r.c32);
  if (r.c64 != nullptr) return f(*r.c64);
  const rope_table_py& t = *r.table;
  return visit(t.type, [&](auto tag) {
    using C = decltype(tag);
    return f(posenc::rope_table_view<C>(static_cast<const C*>(t.cos), static_cast<const C*>(t.sin), t.max_positions,
                                        t.row_stride, t.pair_stride, t.geometry));
  });
}

/// A read-only NumPy view of immutable plan or cache data, keeping `owner` (the Python object) alive.
template <class T, std::size_t N>
nb::ndarray<nb::numpy, const T, nb::ndim<N>> ro_view(const T* data, const std::array<std::size_t, N>& shape,
                                                   nb::handle owner) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<N>>(data, N, shape.data(), owner);
}

// One binder per encoding family (plans.cpp, rope.cpp, ...), called by module.cpp.
void bind_plans(nb::module_& m);
void bind_rope(nb::module_& m);
void bind_mrope(nb::module_& m);
void bind_xpos(nb::module_& m);
void bind_alibi(nb::module_& m);
void bind_sinusoidal(nb::module_& m);
void bind_t5(nb::module_& m);
void bind_modules(nb::module_& m);
void bind_quant(nb::module_& m);

}  // namespace pyposenc
