// posenc Python bindings (the `posenc._posenc` extension module): posenc's no-throw `try_` entry points over the
// caller's arrays, zero-copy. An array argument (NumPy, PyTorch or any DLPack producer on the CPU) becomes a
// posenc::strided_view of the same memory with the array's element strides; a layout name only permutes those
// strides. Every posenc::status that is not ok becomes a Python exception carrying its message (ValueError for
// invalid_argument and invalid_file, OSError for io_error, MemoryError for out_of_memory); posenc validates
// every argument before it writes anything, so a rejected call leaves the arrays as they were. The GIL is
// released while a posenc call runs. This layer is deliberately strict (no conversions, no allocation of
// outputs): posenc/__init__.py is the documented Pythonic API over it.
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
namespace {

using A4 = std::array<index_t, 4>;

// ------------------------------------------------------------------------------------------------ errors

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

[[noreturn]] void raise(PyObject* type, const std::string& message) {
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
void check(const posenc::status& s) {
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

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Any public enum from its name, through posenc's one spelling table (posenc/enum_names.hpp: '-' or '_', any
/// case); a ValueError listing the accepted names otherwise.
template <class E>
E parse_enum(const std::string& s, const char* fn, const char* what) {
  E e{};
  if (!posenc::parse(s, e)) value_error(fn, what, "='", s, "' is not one of: ", posenc::enum_choices<E>().c_str());
  return e;
}

posenc::rope_style parse_style(const std::string& s, const char* fn, const char* what = "style") {
  return parse_enum<posenc::rope_style>(s, fn, what);
}

// ------------------------------------------------------------------------------------------------ arrays

/// The floating-point element types posenc computes on.
enum class dt { f32, f64, f16, bf16 };

std::string dlpack_name(const nb::dlpack::dtype& t) {
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

bool is(const nb::dlpack::dtype& t, nb::dlpack::dtype_code c, int bits) {
  return t.code == static_cast<std::uint8_t>(c) && t.bits == bits && t.lanes == 1;
}

dt float_dtype(const nb::dlpack::dtype& t, const char* fn, const char* name) {
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
std::string shape_str(const arr& a) {
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

/// posenc::layout by name; every layout is a permutation of strides (or a unit dimension), never a copy.
enum class lay { nlhd, nhld, lhd, nld, ld };

lay parse_layout(const std::string& name, std::size_t ndim, const char* fn, const char* arg) {
  const std::string u = lower(name);
  if (u.empty()) {
    if (ndim == 4) return lay::nlhd;
    if (ndim == 2) return lay::ld;
    if (ndim == 3)
      value_error(fn, arg, " has 3 dimensions: name its layout, layout='LHD' (L, H, D) or layout='NLD' (N, L, D)");
    value_error(fn, arg, " has ", ndim, " dimensions; (N, L, H, D) tensors have 4 (or 3 or 2 with a layout)");
  }
  lay l = lay::nlhd;
  std::size_t rank = 4;
  if (u == "nlhd") l = lay::nlhd;
  else if (u == "nhld") l = lay::nhld;
  else if (u == "lhd") l = lay::lhd, rank = 3;
  else if (u == "nld") l = lay::nld, rank = 3;
  else if (u == "ld") l = lay::ld, rank = 2;
  else value_error(fn, "layout='", name, "' is not 'NLHD', 'NHLD', 'LHD', 'NLD' or 'LD'");
  if (ndim != rank) value_error(fn, arg, " has ", ndim, " dimensions; layout '", name, "' needs ", rank);
  return l;
}

/// The (N, L, H, D) view of an array in layout l (posenc::as_nlhd's mapping, on the array's own strides).
struct v4 {
  void* data = nullptr;
  A4 ext{};
  A4 str{};
  dt type = dt::f32;
};

v4 to_nlhd(const arr& a, lay l, dt type) {
  v4 v;
  v.data = a.data;
  v.type = type;
  const A4& e = a.ext;
  const A4& s = a.str;
  switch (l) {
    case lay::nlhd: v.ext = e; v.str = s; break;
    case lay::nhld: v.ext = {e[0], e[2], e[1], e[3]}; v.str = {s[0], s[2], s[1], s[3]}; break;
    case lay::lhd: v.ext = {1, e[0], e[1], e[2]}; v.str = {0, s[0], s[1], s[2]}; break;
    case lay::nld: v.ext = {e[0], e[1], 1, e[2]}; v.str = {s[0], s[1], 0, s[2]}; break;
    case lay::ld: v.ext = {1, e[0], 1, e[1]}; v.str = {0, s[0], 0, s[1]}; break;
  }
  return v;
}

template <class Array>
v4 tensor4(const Array& a, const std::string& layout, const char* fn, const char* name) {
  const arr d = describe(a, fn, name);
  return to_nlhd(d, parse_layout(layout, d.ndim, fn, name), float_dtype(d.dtype, fn, name));
}

/// Whether two (N, L, H, D) views are one tensor (the in-place form of an out-of-place call).
bool same_tensor(const v4& a, const v4& b) {
  return a.data == b.data && a.ext == b.ext && a.str == b.str && a.type == b.type;
}

template <class T>
posenc::strided_view<T, 4> view4(const v4& v) {
  return posenc::strided_view<T, 4>(static_cast<T*>(v.data), v.ext, v.str);
}

// ------------------------------------------------------------------------------------------------ positions

using ro_array = nb::ndarray<nb::ro>;
using rw_array = nb::ndarray<>;

/// The positions of a call over a batch of N sequences, each meaning named by its keyword (never guessed from a
/// shape): no ids: positions::offset(offset); `starts` (is_starts): one start per sequence, shape (N,),
/// positions::per_sequence; `positions`: one id per token, shape (N, L), or (L,) / (1, L) broadcast over the
/// batch (as HF position_ids), positions::per_token. int32 or int64, the last dimension contiguous; posenc
/// checks L and the values.
posenc::positions make_positions(const std::optional<ro_array>& ids, bool is_starts, index_t offset, index_t batch,
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
const std::int64_t* int64_data(const arr& a, const char* fn, const char* name) {
  if (!is(a.dtype, nb::dlpack::dtype_code::Int, 64)) type_error(fn, name, " have dtype ", dlpack_name(a.dtype), "; int64 is needed");
  index_t expect = 1;
  for (std::size_t d = a.ndim; d-- > 0;) {
    if (a.ext[d] > 1 && a.str[d] != expect) value_error(fn, name, " must be C-contiguous");
    expect *= a.ext[d];
  }
  return static_cast<const std::int64_t*>(a.data);
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

/// The frequency source of a RoPE call: a plan (angles in double per call) or a cache (table lookup).
struct freq_ref {
  const posenc::rope_plan* plan = nullptr;
  const posenc::rope_cache<float>* c32 = nullptr;
  const posenc::rope_cache<double>* c64 = nullptr;
};

freq_ref get_freq(nb::handle h, const char* fn, const char* name = "plan") {
  freq_ref r;
  if (nb::isinstance<rope_plan_py>(h)) {
    r.plan = &nb::cast<const rope_plan_py&>(h).plan;
  } else if (nb::isinstance<rope_cache_py>(h)) {
    const auto& c = nb::cast<const rope_cache_py&>(h).cache;
    if (const auto* f = std::get_if<posenc::rope_cache<float>>(&c)) r.c32 = f;
    else r.c64 = &std::get<posenc::rope_cache<double>>(c);
  } else {
    type_error(fn, name, " must be a posenc.RopePlan or posenc.RopeCache, got ", nb::cast<std::string>(nb::type_name(h.type())));
  }
  return r;
}

template <class F>
posenc::status visit_freq(const freq_ref& r, F&& f) {
  if (r.plan != nullptr) return f(*r.plan);
  if (r.c32 != nullptr) return f(*r.c32);
  return f(*r.c64);
}

/// A read-only NumPy view of immutable plan or cache data, keeping `owner` (the Python object) alive.
template <class T, std::size_t N>
nb::ndarray<nb::numpy, const T, nb::ndim<N>> ro_view(const T* data, const std::array<std::size_t, N>& shape,
                                                   nb::handle owner) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<N>>(data, N, shape.data(), owner);
}

nb::dict scaling_dict(const posenc::rope_scaling& s) {
  nb::dict d;
  d["type"] = posenc::to_string(s.type);
  using t = posenc::rope_scaling_type;
  if (s.type != t::none) d["factor"] = s.factor;
  if (s.type == t::dynamic_ntk || s.type == t::yarn || s.type == t::deepseek_yarn || s.type == t::llama3 ||
      s.type == t::longrope)
    d["original_max_positions"] = s.original_max_positions;
  if (s.type == t::dynamic_ntk) d["dynamic_policy"] = posenc::to_string(s.ntk_policy);
  if (s.type == t::yarn || s.type == t::deepseek_yarn) {
    d["beta_fast"] = s.beta_fast;
    d["beta_slow"] = s.beta_slow;
    d["truncate"] = s.truncate;
    d["mscale"] = s.mscale;
    d["mscale_all_dim"] = s.mscale_all_dim;
  }
  if (s.type == t::yarn || s.type == t::deepseek_yarn || s.type == t::longrope)
    d["attention_factor"] = s.attention_factor ? nb::cast(*s.attention_factor) : nb::none();
  if (s.type == t::llama3) {
    d["low_freq_factor"] = s.low_freq_factor;
    d["high_freq_factor"] = s.high_freq_factor;
  }
  if (s.type == t::longrope) {
    d["short_factor"] = s.short_factor;
    d["long_factor"] = s.long_factor;
    d["longrope_policy"] = posenc::to_string(s.long_policy);
  }
  return d;
}

std::optional<nb::dict> config_dict(const std::optional<posenc::rope_config>& c) {
  if (!c) return std::nullopt;
  nb::dict d;
  d["head_dim"] = c->head_dim;
  d["rotary_dim"] = c->rotary_dim == 0 ? c->head_dim : c->rotary_dim;
  d["rotary_offset"] = c->rotary_offset;
  d["base"] = c->base;
  d["style"] = posenc::to_string(c->style);
  d["scaling"] = scaling_dict(c->scaling);
  d["freq_factors"] = c->freq_factors;
  return d;
}

rope_plan_py plan_from_config(posenc::rope_config cfg, index_t seq_len) {
  rope_plan_py p;
  check(posenc::try_make_rope_plan(cfg, seq_len, p.plan));
  p.config = std::move(cfg);
  p.seq_len = seq_len;
  return p;
}

template <class T>
T get(const nb::dict& d, const char* key, T fallback) {
  return d.contains(key) ? nb::cast<T>(d[key]) : fallback;
}
template <class T>
std::optional<T> get_opt(const nb::dict& d, const char* key) {
  if (!d.contains(key)) return std::nullopt;
  nb::object v = d[key];
  if (v.is_none()) return std::nullopt;
  return nb::cast<T>(v);
}

/// A rope_config from a dict in the form RopePlan.config returns (so a loaded configuration can be copied,
/// edited and planned again). Every key is checked: an unknown one is a ValueError naming the known ones, a
/// missing one keeps rope_config's default.
posenc::rope_config config_from_dict(const nb::dict& d, const char* fn) {
  static const char* const top[] = {"head_dim", "rotary_dim", "rotary_offset", "base", "style", "scaling", "freq_factors"};
  static const char* const sc[] = {"type", "factor", "original_max_positions", "dynamic_policy", "beta_fast",
                                   "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor",
                                   "low_freq_factor", "high_freq_factor", "short_factor", "long_factor",
                                   "longrope_policy"};
  const auto check_keys = [fn](const nb::dict& dd, const char* where, const auto& known) {
    for (auto kv : dd) {
      const std::string k = nb::cast<std::string>(kv.first);
      bool ok = false;
      std::string list;
      for (const char* n : known) {
        ok = ok || k == n;
        list += list.empty() ? n : std::string(", ") + n;
      }
      if (!ok) value_error(fn, where, " has no key '", k, "' (known: ", list, ")");
    }
  };
  check_keys(d, "config", top);
  posenc::rope_config c;
  c.head_dim = get<index_t>(d, "head_dim", 0);
  c.rotary_dim = get<index_t>(d, "rotary_dim", 0);
  c.rotary_offset = get<index_t>(d, "rotary_offset", 0);
  c.base = get<double>(d, "base", c.base);
  c.style = parse_style(get<std::string>(d, "style", "half_split"), fn);
  c.freq_factors = get<std::vector<double>>(d, "freq_factors", {});
  if (d.contains("scaling")) {
    const nb::dict s = nb::cast<nb::dict>(d["scaling"]);
    check_keys(s, "config['scaling']", sc);
    posenc::rope_scaling& r = c.scaling;
    r.type = parse_enum<posenc::rope_scaling_type>(get<std::string>(s, "type", "none"), fn, "scaling type");
    r.factor = get<double>(s, "factor", r.factor);
    r.original_max_positions = get<index_t>(s, "original_max_positions", 0);
    r.ntk_policy = parse_enum<posenc::dynamic_ntk_policy>(get<std::string>(s, "dynamic_policy", "per_length"), fn,
                                                         "dynamic_policy");
    r.beta_fast = get<double>(s, "beta_fast", r.beta_fast);
    r.beta_slow = get<double>(s, "beta_slow", r.beta_slow);
    r.truncate = get<bool>(s, "truncate", r.truncate);
    r.mscale = get<double>(s, "mscale", r.mscale);
    r.mscale_all_dim = get<double>(s, "mscale_all_dim", r.mscale_all_dim);
    r.attention_factor = get_opt<double>(s, "attention_factor");
    r.low_freq_factor = get<double>(s, "low_freq_factor", r.low_freq_factor);
    r.high_freq_factor = get<double>(s, "high_freq_factor", r.high_freq_factor);
    r.short_factor = get<std::vector<double>>(s, "short_factor", {});
    r.long_factor = get<std::vector<double>>(s, "long_factor", {});
    r.long_policy = parse_enum<posenc::longrope_policy>(get<std::string>(s, "longrope_policy", "per_length"), fn,
                                                        "longrope_policy");
  }
  return c;
}

/// rope_params from a dict of its field names (already type-checked by posenc/_hf.py), mapped by posenc's one
/// rope_params mapping (rope_params.hpp) with the caller's key names in messages, then planned.
std::pair<rope_plan_py, std::string> plan_from_params(const nb::dict& d, const nb::dict& names, index_t seq_len,
                                                      std::optional<double> ntk_factor) {
  constexpr const char* fn = "RopePlan";
  posenc::rope_params p;
  p.head_dim = get<index_t>(d, "head_dim", 0);
  p.rotary_dim = get<index_t>(d, "rotary_dim", 0);
  p.partial_rotary_factor = get<double>(d, "partial_rotary_factor", 1.0);
  p.rotary_offset = get<index_t>(d, "rotary_offset", 0);
  p.base = get<double>(d, "base", 10000.0);
  p.style = parse_style(get<std::string>(d, "style", "half_split"), fn);
  p.scaling_type = get<std::string>(d, "scaling_type", "default");
  p.factor = get_opt<double>(d, "factor");
  p.original_max_positions = get<index_t>(d, "original_max_positions", 0);
  p.max_position_embeddings = get<index_t>(d, "max_position_embeddings", 0);
  p.beta_fast = get_opt<double>(d, "beta_fast");
  p.beta_slow = get_opt<double>(d, "beta_slow");
  p.mscale = get_opt<double>(d, "mscale");
  p.mscale_all_dim = get_opt<double>(d, "mscale_all_dim");
  p.truncate = get<bool>(d, "truncate", true);
  const std::string variant = get<std::string>(d, "yarn_variant", "yarn");
  if (variant != "yarn" && variant != "deepseek") value_error(fn, "yarn_variant='", variant, "' is not 'yarn' or 'deepseek'");
  p.yarn_variant = variant == "deepseek" ? posenc::rope_yarn_variant::deepseek : posenc::rope_yarn_variant::yarn;
  p.attention_factor = get_opt<double>(d, "attention_factor");
  p.low_freq_factor = get_opt<double>(d, "low_freq_factor");
  p.high_freq_factor = get_opt<double>(d, "high_freq_factor");
  p.short_factor = get<std::vector<double>>(d, "short_factor", {});
  p.long_factor = get<std::vector<double>>(d, "long_factor", {});
  p.ntk_policy = parse_enum<posenc::dynamic_ntk_policy>(get<std::string>(d, "dynamic_policy", "per_length"), fn, "dynamic_policy");
  p.long_policy = parse_enum<posenc::longrope_policy>(get<std::string>(d, "longrope_policy", "per_length"), fn, "longrope_policy");
  p.mrope_section = get<std::vector<index_t>>(d, "mrope_section", {});
  p.mrope_interleaved = get<bool>(d, "mrope_interleaved", false);
  p.freq_factors = get<std::vector<double>>(d, "freq_factors", {});

  // How messages name each field: the keys of the caller's dict or config.json (posenc's HF loader does the
  // same through this structure, detail/hf_mapping.hpp).
  posenc::detail::rope_param_names n;
  const std::string function = get<std::string>(names, "function", fn);
  n.function = function.c_str();
  n.context = get<std::string>(names, "context", "");
  const auto name = [&](std::string& field, const char* key) { field = get<std::string>(names, key, field); };
  name(n.head_dim, "head_dim");
  name(n.rotary_dim, "rotary_dim");
  name(n.partial_rotary_factor, "partial_rotary_factor");
  name(n.scaling_type, "scaling_type");
  name(n.scaling_label, "scaling_label");
  name(n.factor, "factor");
  name(n.original_max_positions, "original_max_positions");
  name(n.max_position_embeddings, "max_position_embeddings");
  name(n.beta_fast, "beta_fast");
  name(n.beta_slow, "beta_slow");
  name(n.mscale, "mscale");
  name(n.mscale_all_dim, "mscale_all_dim");
  name(n.attention_factor, "attention_factor");
  name(n.low_freq_factor, "low_freq_factor");
  name(n.high_freq_factor, "high_freq_factor");
  name(n.short_factor, "short_factor");
  name(n.long_factor, "long_factor");
  name(n.mrope_section, "mrope_section");
  name(n.freq_factors, "freq_factors");

  posenc::rope_config cfg;
  std::string canonical;
  check(posenc::detail::guard_alloc(n.function, [&] { return posenc::detail::rope_params_to_config(p, n, cfg, &canonical); }));
  if (ntk_factor) cfg.scaling = posenc::rope_scaling::ntk(*ntk_factor);
  return {plan_from_config(std::move(cfg), seq_len), canonical};
}

std::pair<rope_plan_py, nb::dict> plan_from_gguf(const std::string& path, std::optional<std::string> style,
                                                 const std::string& long_policy, index_t seq_len) {
  constexpr const char* fn = "RopePlan.from_gguf";
  posenc::gguf_options opt;
  if (style) opt.style = parse_style(*style, fn);
  opt.long_policy = parse_enum<posenc::longrope_policy>(long_policy, fn, "longrope_policy");
  posenc::gguf_rope_info info;
  posenc::status s;
  {
    nb::gil_scoped_release unlocked;
    s = posenc::try_read_gguf_rope(path, info, opt);
  }
  check(s);
  nb::dict d;
  d["version"] = info.version;
  d["architecture"] = info.architecture;
  d["name"] = info.name;
  d["rope_type"] = info.rope_type;
  d["file_scaling_type"] = info.file_scaling_type;
  d["scaling_type"] = info.scaling_type;
  d["context_length"] = info.context_length;
  d["original_context_length"] = info.original_context_length;
  d["embedding_length"] = info.embedding_length;
  d["head_count"] = info.head_count;
  d["head_count_kv"] = info.head_count_kv;
  d["mrope_sections"] = info.mrope_sections;
  d["freq_factors_tensor"] = info.freq_factors_tensor;
  return {plan_from_config(info.config, seq_len), d};
}

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
    return visit(vx.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit(vo.type, [&](auto out_tag) {
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
  const arr sl = describe(slots, fn, paged ? "slot_mapping" : "seq_lens", 2);
  const std::int64_t* slot_data = int64_data(sl, fn, paged ? "slot_mapping" : "seq_lens");
  const index_t n = vk.ext[0], l = vk.ext[1];
  const posenc::kv_slots where = paged ? posenc::kv_slots::paged(slot_data, sl.ndim == 2 ? sl.ext[0] : n, l)
                                       : posenc::kv_slots::contiguous(slot_data, sl.ext[0]);
  if (paged && (sl.ndim == 2 ? sl.ext[0] * sl.ext[1] : sl.ext[0]) != n * l)
    value_error(fn, "slot_mapping has ", sl.ndim == 2 ? sl.ext[0] * sl.ext[1] : sl.ext[0], " slots for N * L = ", n * l,
                " tokens");
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
    return visit(vx.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit(vo.type, [&](auto out_tag) {
        using O = decltype(out_tag);
        if constexpr (std::is_same_v<I, O>) {
          if (inverse) return posenc::try_apply_mrope_backward(plan.plan, view4<O>(vo), pos);
          if (same_tensor(vx, vo)) return posenc::try_apply_mrope(plan.plan, view4<O>(vo), pos);
        }
        return posenc::try_apply_mrope(plan.plan, view4<const I>(vx), view4<O>(vo), pos);
      });
    });
  });
}

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
    return visit(vx.type, [&](auto in_tag) {
      using I = decltype(in_tag);
      return visit(vo.type, [&](auto out_tag) {
        using O = decltype(out_tag);
        if constexpr (std::is_same_v<I, O>) {
          if (inverse) return posenc::try_apply_xpos_backward(plan.plan, view4<O>(vo), pos, c, mode);
          if (same_tensor(vx, vo)) return posenc::try_apply_xpos(plan.plan, view4<O>(vo), pos, c, mode);
        }
        return posenc::try_apply_xpos(plan.plan, view4<const I>(vx), view4<O>(vo), pos, c, mode);
      });
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

// ------------------------------------------------------------------------------------------------ ALiBi

posenc::alibi_config alibi_cfg(index_t num_heads, double max_bias, index_t head_begin, index_t head_end,
                               const std::string& form, const char* fn) {
  posenc::alibi_config cfg;
  cfg.num_heads = num_heads;
  cfg.max_bias = max_bias;
  cfg.head_begin = head_begin;
  cfg.head_end = head_end;
  cfg.form = parse_enum<posenc::alibi_form>(form, fn, "form");
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
                const std::string& form, index_t query_offset, bool causal) {
  constexpr const char* fn = "alibi_bias";
  const arr a = describe(out, fn, "out");
  if (a.ndim != 3) value_error(fn, "out must have shape (H_local, Lq, Lk), got ", a.ndim, " dimensions");
  const posenc::alibi_config cfg = alibi_cfg(num_heads, max_bias, head_begin, head_end, form, fn);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] {
    return visit(float_dtype(a.dtype, fn, "out"), [&](auto tag) {
      using T = decltype(tag);
      return posenc::try_alibi_bias(cfg, view_of<T, 3>(a), query_offset, mask);
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
                    const std::string& form, const std::optional<ro_array>& positions, bool starts, index_t offset, bool causal) {
  constexpr const char* fn = "add_alibi_bias";
  const arr a = describe(scores, fn, "scores");
  if (a.ndim != 3 && a.ndim != 4) value_error(fn, "scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got ", a.ndim, " dimensions");
  const dt type = float_dtype(a.dtype, fn, "scores");
  const posenc::alibi_config cfg = alibi_cfg(num_heads, max_bias, head_begin, head_end, form, fn);
  const posenc::positions pos = make_positions(positions, starts, offset, a.ndim == 4 ? a.ext[0] : 1, fn);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] { return with_scores(a, type, [&](const auto& v) { return posenc::try_add_alibi_bias(cfg, v, pos, mask); }); });
}

void add_alibi_bias_slopes(const rw_array& scores, const ro_array& slopes, const std::string& form,
                           const std::optional<ro_array>& positions, bool starts, index_t offset, bool causal) {
  constexpr const char* fn = "add_alibi_bias";
  const arr a = describe(scores, fn, "scores");
  if (a.ndim != 3 && a.ndim != 4) value_error(fn, "scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got ", a.ndim, " dimensions");
  const dt type = float_dtype(a.dtype, fn, "scores");
  const arr s = describe(slopes, fn, "slopes");
  if (s.ndim != 1 && s.ndim != 2) value_error(fn, "slopes must have shape (H,) or (N, H), got ", s.ndim, " dimensions");
  const dt stype = float_dtype(s.dtype, fn, "slopes");
  const posenc::alibi_form f = alibi_cfg(1, 8.0, 0, -1, form, fn).form;
  const posenc::positions pos = make_positions(positions, starts, offset, a.ndim == 4 ? a.ext[0] : 1, fn);
  const posenc::alibi_mask mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  run([&] {
    return visit(stype, [&](auto stag) {
      using S = decltype(stag);
      return with_scores(a, type, [&](const auto& v) {
        return s.ndim == 1 ? posenc::try_add_alibi_bias(view_of<const S, 1>(s), v, pos, mask, f)
                           : posenc::try_add_alibi_bias(view_of<const S, 2>(s), v, pos, mask, f);
      });
    });
  });
}

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
      return posenc::try_sinusoidal_table(view_of<T, 2>(a), cfg, offset);
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
        if (ax.ndim == 3) return posenc::try_add_sinusoidal(view_of<T, 3>(ao), cfg, pos);
        return posenc::try_add_sinusoidal(view_of<T, 2>(ao), cfg, pos);
      }
      if (ax.ndim == 3) return posenc::try_add_sinusoidal(view_of<const T, 3>(ax), view_of<T, 3>(ao), cfg, pos);
      return posenc::try_add_sinusoidal(view_of<const T, 2>(ax), view_of<T, 2>(ao), cfg, pos);
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

// ------------------------------------------------------------------------------------------------ T5

std::int64_t t5_relative_bucket(std::int64_t relative_position, bool bidirectional, index_t num_buckets, index_t max_distance) {
  std::int64_t out = 0;
  check(posenc::try_t5_relative_bucket(relative_position, bidirectional, num_buckets, max_distance, out));
  return out;
}

void t5_relative_bucket_array(const ro_array& relative, const rw_array& out, bool bidirectional, index_t num_buckets,
                              index_t max_distance) {
  constexpr const char* fn = "t5_relative_bucket";
  const arr r = describe(relative, fn, "relative_position", 1);
  const arr o = describe(out, fn, "out", 1);
  if (relative.size() != out.size()) value_error(fn, "out has ", out.size(), " elements where relative_position has ", relative.size());
  const std::int64_t* pr = int64_data(r, fn, "relative_position");
  auto* po = const_cast<std::int64_t*>(int64_data(o, fn, "out"));
  const std::size_t n = relative.size();
  run([&] {
    std::int64_t b = 0;
    // Validates the configuration once (writing nothing on error), then buckets every element.
    POSENC_TRY(posenc::try_t5_relative_bucket(0, bidirectional, num_buckets, max_distance, b));
    for (std::size_t i = 0; i < n; ++i) {
      POSENC_TRY(posenc::try_t5_relative_bucket(pr[i], bidirectional, num_buckets, max_distance, b));
      po[i] = b;
    }
    return posenc::status{};
  });
}

void t5_bucket_table(const rw_array& out, bool bidirectional, index_t num_buckets, index_t max_distance,
                     index_t query_offset) {
  constexpr const char* fn = "t5_bucket_table";
  const arr a = describe(out, fn, "out");
  if (a.ndim != 2) value_error(fn, "out must have shape (Lq, Lk), got ", a.ndim, " dimensions");
  const posenc::t5_bucket_config cfg{bidirectional, num_buckets, max_distance};
  using code = nb::dlpack::dtype_code;
  if (is(a.dtype, code::Int, 64)) {
    run([&] { return posenc::try_t5_bucket_table(view_of<std::int64_t, 2>(a), cfg, query_offset); });
  } else if (is(a.dtype, code::Int, 32)) {
    run([&] { return posenc::try_t5_bucket_table(view_of<std::int32_t, 2>(a), cfg, query_offset); });
  } else {
    type_error(fn, "out has dtype ", dlpack_name(a.dtype), "; int64 or int32 is needed");
  }
}

}  // namespace
}  // namespace pyposenc

NB_MODULE(_posenc, m) {
  using namespace pyposenc;
  m.doc() = "posenc's C++ kernels over NumPy/PyTorch/DLPack arrays, zero-copy (low-level; use the posenc package).";
  m.attr("__version__") = POSENC_VERSION_STRING;

  // ---- ISA dispatch
  m.def("isa", [] { return std::string(posenc::isa_name(posenc::active_isa())); },
        "The instruction set of the kernels posenc runs now: 'scalar', 'avx2', 'avx512' or 'neon'.");
  m.def("set_isa", [](const std::string& name) { return std::string(posenc::isa_name(posenc::set_isa(parse_enum<posenc::isa>(name, "set_isa", "isa")))); },
        nb::arg("name"), "Caps the kernels at `name`; returns the ISA now active (the widest supported below it).");
  m.def("reset_isa", [] { return std::string(posenc::isa_name(posenc::reset_isa())); },
        "Back to the default ISA (POSENC_ISA if set, else the widest the CPU supports); returns it.");
  m.def("cpu_supports", [](const std::string& name) { return posenc::cpu_supports(parse_enum<posenc::isa>(name, "cpu_supports", "isa")); },
        nb::arg("name"), "Whether this CPU and OS can run posenc's kernels for the named ISA.");

  // ---- plans
  nb::class_<rope_plan_py>(m, "RopePlanCore", "A posenc::rope_plan (immutable).")
      .def_static("from_params", &plan_from_params, nb::arg("params"), nb::arg("names"), nb::arg("seq_len"),
                  nb::arg("ntk_factor").none())
      .def_static(
          "from_inv_freq",
          [](index_t head_dim, std::vector<double> inv_freq, const std::string& style, index_t rotary_offset,
             double magnitude, double logit_scale) {
            rope_plan_py p;
            check(posenc::rope_plan::try_create(head_dim, std::move(inv_freq), parse_style(style, "RopePlan.from_inv_freq"),
                                                rotary_offset, magnitude, logit_scale, p.plan));
            return p;
          },
          nb::arg("head_dim"), nb::arg("inv_freq"), nb::arg("style"), nb::arg("rotary_offset"), nb::arg("magnitude"),
          nb::arg("logit_scale"))
      .def_static("from_gguf", &plan_from_gguf, nb::arg("path"), nb::arg("style").none(), nb::arg("longrope_policy"),
                  nb::arg("seq_len"))
      .def_static(
          "sectioned",
          [](index_t head_dim, double base, std::array<index_t, 3> sections, const std::string& style) {
            rope_plan_py p;
            check(posenc::try_make_sectioned_rope_plan(head_dim, base, sections,
                                                       parse_style(style, "RopePlan.sectioned"), p.plan));
            return p;
          },
          nb::arg("head_dim"), nb::arg("base"), nb::arg("sections"), nb::arg("style"))
      .def_static("from_config",
                  [](const nb::dict& d, index_t seq_len) { return plan_from_config(config_from_dict(d, "RopePlan.from_config"), seq_len); },
                  nb::arg("config"), nb::arg("seq_len"))
      .def("with_seq_len",
           [](const rope_plan_py& p, index_t seq_len) {
             if (!p.config) value_error("RopePlan.with_seq_len", "the plan was not built from a configuration");
             return plan_from_config(*p.config, seq_len);
           },
           nb::arg("seq_len"))
      .def_prop_ro("head_dim", [](const rope_plan_py& p) { return p.plan.head_dim(); })
      .def_prop_ro("rotary_dim", [](const rope_plan_py& p) { return p.plan.rotary_dim(); })
      .def_prop_ro("rotary_offset", [](const rope_plan_py& p) { return p.plan.rotary_offset(); })
      .def_prop_ro("pairs", [](const rope_plan_py& p) { return p.plan.pairs(); })
      .def_prop_ro("style", [](const rope_plan_py& p) { return std::string(posenc::to_string(p.plan.style())); })
      .def_prop_ro("magnitude", [](const rope_plan_py& p) { return p.plan.magnitude(); })
      .def_prop_ro("logit_scale", [](const rope_plan_py& p) { return p.plan.logit_scale(); })
      .def_prop_ro("seq_len", [](const rope_plan_py& p) { return p.seq_len; })
      .def_prop_ro("config", [](const rope_plan_py& p) { return config_dict(p.config); })
      .def_prop_ro("inv_freq", [](const rope_plan_py& p) {
        const auto& w = p.plan.inv_freq();
        return ro_view<double, 1>(w.data(), {w.size()}, nb::find(&p));
      });

  nb::class_<rope_cache_py>(m, "RopeCacheCore", "A posenc::rope_cache<float or double>.")
      .def(
          "__init__",
          [](rope_cache_py* self, const rope_plan_py& plan, index_t max_positions, const std::string& dtype) {
            if (dtype == "float32") {
              posenc::rope_cache<float> c;
              check(posenc::rope_cache<float>::try_create(plan.plan, max_positions, c));
              new (self) rope_cache_py{std::move(c)};
            } else if (dtype == "float64") {
              posenc::rope_cache<double> c;
              check(posenc::rope_cache<double>::try_create(plan.plan, max_positions, c));
              new (self) rope_cache_py{std::move(c)};
            } else {
              value_error("RopeCache", "dtype='", dtype, "' is not 'float32' or 'float64'");
            }
          },
          nb::arg("plan"), nb::arg("max_positions"), nb::arg("dtype"))
      .def_prop_ro("max_positions", &rope_cache_py::max_positions)
      .def_prop_ro("dtype", [](const rope_cache_py& c) {
        return std::string(std::holds_alternative<posenc::rope_cache<float>>(c.cache) ? "float32" : "float64");
      })
      .def_prop_ro("plan", [](const rope_cache_py& c) { return rope_plan_py{c.plan(), std::nullopt, 0}; })
      .def_prop_ro("cos", [](const rope_cache_py& c) {
        const std::array<std::size_t, 2> shape{static_cast<std::size_t>(c.max_positions()),
                                               static_cast<std::size_t>(c.plan().pairs())};
        return std::visit([&](const auto& t) { return nb::cast(ro_view(t.cos_data(), shape, nb::find(&c))); }, c.cache);
      })
      .def_prop_ro("sin", [](const rope_cache_py& c) {
        const std::array<std::size_t, 2> shape{static_cast<std::size_t>(c.max_positions()),
                                               static_cast<std::size_t>(c.plan().pairs())};
        return std::visit([&](const auto& t) { return nb::cast(ro_view(t.sin_data(), shape, nb::find(&c))); }, c.cache);
      });

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

  // ---- operations (all arguments as posenc takes them; see posenc/__init__.py for the documented API)
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
  m.def("apply_mrope", &apply_mrope, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert(), nb::arg("inverse"), nb::arg("layout"));
  m.def("apply_xpos", &apply_xpos, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("center").none(), nb::arg("downscale"),
        nb::arg("inverse"), nb::arg("layout"));
  m.def("apply_xpos_qk", &apply_xpos_qk, nb::arg("q").noconvert(), nb::arg("k").noconvert(), nb::arg("plan"),
        nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("center").none(), nb::arg("layout"));
  m.def("alibi_slopes", &alibi_slopes, nb::arg("out").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"));
  m.def("alibi_bias", &alibi_bias, nb::arg("out").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"), nb::arg("form"), nb::arg("query_offset"), nb::arg("causal"));
  m.def("add_alibi_bias", &add_alibi_bias, nb::arg("scores").noconvert(), nb::arg("num_heads"), nb::arg("max_bias"),
        nb::arg("head_begin"), nb::arg("head_end"), nb::arg("form"), nb::arg("positions").noconvert().none(), nb::arg("starts"),
        nb::arg("offset"), nb::arg("causal"));
  m.def("add_alibi_bias_slopes", &add_alibi_bias_slopes, nb::arg("scores").noconvert(), nb::arg("slopes").noconvert(),
        nb::arg("form"), nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("causal"));
  m.def("sinusoidal_table", &sinusoidal_table, nb::arg("out").noconvert(), nb::arg("dim"), nb::arg("base"),
        nb::arg("style"), nb::arg("padding_idx").none(), nb::arg("offset"));
  m.def("add_sinusoidal", &add_sinusoidal, nb::arg("x").noconvert(), nb::arg("out").noconvert(), nb::arg("dim"),
        nb::arg("base"), nb::arg("style"), nb::arg("padding_idx").none(), nb::arg("positions").noconvert().none(), nb::arg("starts"),
        nb::arg("offset"));
  m.def("make_padded_positions", &make_padded_positions, nb::arg("tokens").noconvert(), nb::arg("out").noconvert(),
        nb::arg("padding_idx"), nb::arg("past_length"));
  m.def("t5_relative_bucket", &t5_relative_bucket, nb::arg("relative_position"), nb::arg("bidirectional"),
        nb::arg("num_buckets"), nb::arg("max_distance"));
  m.def("t5_relative_bucket_array", &t5_relative_bucket_array, nb::arg("relative_position").noconvert(),
        nb::arg("out").noconvert(), nb::arg("bidirectional"), nb::arg("num_buckets"), nb::arg("max_distance"));
  m.def("t5_bucket_table", &t5_bucket_table, nb::arg("out").noconvert(), nb::arg("bidirectional"),
        nb::arg("num_buckets"), nb::arg("max_distance"), nb::arg("query_offset"));
}
