// posenc Python bindings: the modules with learned tables (T5RelativeBiasCore, LearnedCore, LearnedCacheCore):
// their tables are writable NumPy views of the C++ module's own memory (posenc.torch wraps them as Parameters
// sharing that memory), their gradients read-only views, forward and backward the C++ module's.
#include <random>

#include <posenc/learned.hpp>

#include "common.hpp"

namespace pyposenc {
namespace {

/// A writable NumPy view of a module's parameter memory, keeping `owner` (the Python object) alive.
template <class T, std::size_t N>
nb::ndarray<nb::numpy, T, nb::ndim<N>> rw_view(T* data, const std::array<std::size_t, N>& shape, nb::handle owner) {
  return nb::ndarray<nb::numpy, T, nb::ndim<N>>(data, N, shape.data(), owner);
}

/// "float32" or "float64" (the table's storage type); anything else is a TypeError.
inline bool table_is_double(const std::string& dtype, const char* fn) {
  if (dtype == "float64") return true;
  if (dtype != "float32") type_error(fn, "dtype='", dtype, "': the table is float32 or float64");
  return false;
}

// ---------------------------------------------------------------------------------------------- T5 relative bias

struct t5_bias_py {
  std::variant<posenc::t5_relative_bias<float>, posenc::t5_relative_bias<double>> m;
};

template <class F>
decltype(auto) with(t5_bias_py& b, F&& f) {
  return std::visit(std::forward<F>(f), b.m);
}

void t5_init(t5_bias_py* self, index_t num_heads, bool bidirectional, index_t num_buckets, index_t max_distance,
             const std::string& dtype) {
  constexpr const char* fn = "T5RelativeBias";
  const posenc::t5_bucket_config cfg{bidirectional, num_buckets, max_distance};
  if (table_is_double(dtype, fn)) {
    posenc::t5_relative_bias<double> m;
    check(posenc::t5_relative_bias<double>::try_create(num_heads, cfg, m));
    new (self) t5_bias_py{std::move(m)};
  } else {
    posenc::t5_relative_bias<float> m;
    check(posenc::t5_relative_bias<float>::try_create(num_heads, cfg, m));
    new (self) t5_bias_py{std::move(m)};
  }
}

/// bias[h, i, j] = table[bucket(j - (i + query_offset)), h] into `out` (H, Lq, Lk).
void t5_forward(t5_bias_py& b, const rw_array& out, index_t query_offset) {
  constexpr const char* fn = "T5RelativeBias.forward";
  const arr a = describe(out, fn, "out", 3);
  if (a.ndim != 3) value_error(fn, "out must have shape (H, Lq, Lk), got ", a.ndim, " dimensions");
  run([&] {
    return visit(float_dtype(a.dtype, fn, "out"), [&](auto tag) {
      using T = decltype(tag);
      return with(b, [&](const auto& m) { return m.try_forward(view_of<T, 3>(a), query_offset); });
    });
  });
}

/// table_grad[bucket, h] += the gradients of the (h, i, j) in that bucket, for grad_bias (H, Lq, Lk).
void t5_backward(t5_bias_py& b, const ro_array& grad, index_t query_offset) {
  constexpr const char* fn = "T5RelativeBias.backward";
  const arr a = describe(grad, fn, "grad_bias", 3);
  if (a.ndim != 3) value_error(fn, "grad_bias must have shape (H, Lq, Lk), got ", a.ndim, " dimensions");
  run([&] {
    return visit(float_dtype(a.dtype, fn, "grad_bias"), [&](auto tag) {
      using T = decltype(tag);
      return with(b, [&](auto& m) { return m.try_backward(view_of<const T, 3>(a), query_offset); });
    });
  });
}

/// scores (N, H, Lq, Lk) or (H, Lq, Lk) += the bias, query positions as everywhere.
void t5_add(t5_bias_py& b, const rw_array& scores, const std::optional<ro_array>& positions, bool starts, index_t offset) {
  constexpr const char* fn = "add_t5_bias";
  const arr a = describe(scores, fn, "scores");
  if (a.ndim != 3 && a.ndim != 4) value_error(fn, "scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got ", a.ndim, " dimensions");
  const posenc::positions pos = make_positions(positions, starts, offset, a.ndim == 4 ? a.ext[0] : 1, fn);
  run([&] {
    return visit(float_dtype(a.dtype, fn, "scores"), [&](auto tag) {
      using T = decltype(tag);
      return with(b, [&](const auto& m) {
        if (a.ndim == 4) return posenc::try_add_t5_bias(m, view_of<T, 4>(a), pos);
        return posenc::try_add_t5_bias(m, view_of<T, 3>(a), pos);
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------- learned

struct learned_py {
  std::variant<posenc::learned_position_embedding<float>, posenc::learned_position_embedding<double>> m;
};
struct learned_cache_py {
  posenc::learned_cache cache;
};

void learned_init(learned_py* self, index_t max_positions, index_t dim, index_t position_offset, double scale,
                  bool layer_norm, double eps, double dropout, const std::string& dtype) {
  constexpr const char* fn = "LearnedPositionEmbedding";
  posenc::learned_config cfg;
  cfg.max_positions = max_positions;
  cfg.dim = dim;
  cfg.position_offset = position_offset;
  cfg.scale = scale;
  cfg.layer_norm = layer_norm;
  cfg.eps = eps;
  cfg.dropout = dropout;
  // Built in place: a learned_cache records its module's address, so the module never moves once made.
  if (table_is_double(dtype, fn)) {
    new (self) learned_py{posenc::learned_position_embedding<double>()};
    check(posenc::learned_position_embedding<double>::try_create(cfg, std::get<1>(self->m)));
  } else {
    new (self) learned_py{posenc::learned_position_embedding<float>()};
    check(posenc::learned_position_embedding<float>::try_create(cfg, std::get<0>(self->m)));
  }
}

/// out = LN(x + scale * E[p + offset]) (dropout in training, one mt19937_64(seed) draw per element), filling
/// `cache` for backward. x, out: (N, L, D) of one float dtype; out may be x.
void learned_forward(const learned_py& l, const ro_array& x, const rw_array& out, const std::optional<ro_array>& positions,
                     bool starts, index_t offset, bool train, std::uint64_t seed, learned_cache_py& cache) {
  constexpr const char* fn = "LearnedPositionEmbedding.forward";
  const arr ax = describe(x, fn, "x", 3);
  const arr ao = describe(out, fn, "out", 3);
  if (ax.ndim != 3 || ao.ndim != 3) value_error(fn, "x and out must have shape (N, L, D)");
  const dt tx = float_dtype(ax.dtype, fn, "x");
  if (float_dtype(ao.dtype, fn, "out") != tx)
    type_error(fn, "out (", dlpack_name(ao.dtype), ") must have x's dtype (", dlpack_name(ax.dtype), ")");
  const posenc::positions pos = make_positions(positions, starts, offset, ax.ext[0], fn);
  std::mt19937_64 rng(seed);
  run([&] {
    return visit(tx, [&](auto tag) {
      using T = decltype(tag);
      return std::visit(
          [&](const auto& m) {
            if (ax.data == ao.data && ax.ext == ao.ext && ax.str == ao.str)
              return m.try_forward(view_of<T, 3>(ao), pos, train, rng, cache.cache);
            return m.try_forward(view_of<const T, 3>(ax), view_of<T, 3>(ao), pos, train, rng, cache.cache);
          },
          l.m);
    });
  });
}

/// grad_in = dL/dx from grad_out of the forward that filled `cache`; dL/dE (and gamma, beta) accumulate.
void learned_backward(learned_py& l, const ro_array& grad_out, const rw_array& grad_in, const learned_cache_py& cache) {
  constexpr const char* fn = "LearnedPositionEmbedding.backward";
  const arr ag = describe(grad_out, fn, "grad_out", 3);
  const arr ai = describe(grad_in, fn, "grad_in", 3);
  if (ag.ndim != 3 || ai.ndim != 3) value_error(fn, "grad_out and grad_in must have shape (N, L, D)");
  const dt tg = float_dtype(ag.dtype, fn, "grad_out");
  if (float_dtype(ai.dtype, fn, "grad_in") != tg)
    type_error(fn, "grad_in (", dlpack_name(ai.dtype), ") must have grad_out's dtype (", dlpack_name(ag.dtype), ")");
  run([&] {
    return visit(tg, [&](auto tag) {
      using T = decltype(tag);
      return std::visit(
          [&](auto& m) {
            if (ag.data == ai.data && ag.ext == ai.ext && ag.str == ai.str)
              return m.try_backward(view_of<T, 3>(ai), view_of<T, 3>(ai), cache.cache);
            return m.try_backward(view_of<const T, 3>(ag), view_of<T, 3>(ai), cache.cache);
          },
          l.m);
    });
  });
}

}  // namespace

void bind_modules(nb::module_& m) {
  nb::class_<t5_bias_py>(m, "T5RelativeBiasCore", "A posenc::t5_relative_bias<float or double>.")
      .def("__init__", &t5_init, nb::arg("num_heads"), nb::arg("bidirectional"), nb::arg("num_buckets"),
           nb::arg("max_distance"), nb::arg("dtype"))
      .def_prop_ro("table", [](t5_bias_py& b) {
        return with(b, [&](auto& t) {
          const auto v = t.table();
          return nb::cast(rw_view(v.data(), std::array<std::size_t, 2>{static_cast<std::size_t>(v.extent(0)),
                                                                          static_cast<std::size_t>(v.extent(1))},
                                  nb::find(&b)));
        });
      })
      .def_prop_ro("table_grad", [](t5_bias_py& b) {
        return with(b, [&](const auto& t) {
          const auto v = t.table_grad();
          return nb::cast(ro_view(v.data(), std::array<std::size_t, 2>{static_cast<std::size_t>(v.extent(0)),
                                                                       static_cast<std::size_t>(v.extent(1))},
                                  nb::find(&b)));
        });
      })
      .def("zero_grad", [](t5_bias_py& b) { with(b, [](auto& t) { t.zero_grad(); }); })
      .def("init_normal", [](t5_bias_py& b, std::uint64_t seed, double stddev) {
        run([&] { return with(b, [&](auto& t) { return t.try_init_normal(seed, stddev); }); });
      }, nb::arg("seed"), nb::arg("stddev"))
      .def("forward", &t5_forward, nb::arg("out").noconvert(), nb::arg("query_offset"))
      .def("backward", &t5_backward, nb::arg("grad_bias").noconvert(), nb::arg("query_offset"))
      .def("add", &t5_add, nb::arg("scores").noconvert(), nb::arg("positions").noconvert().none(), nb::arg("starts"),
           nb::arg("offset"));

  nb::class_<learned_cache_py>(m, "LearnedCacheCore", "A posenc::learned_cache (what a forward keeps for its backward).")
      .def(nb::init<>())
      .def_prop_ro("filled", [](const learned_cache_py& c) { return c.cache.filled(); });

  nb::class_<learned_py>(m, "LearnedCore", "A posenc::learned_position_embedding<float or double>.")
      .def("__init__", &learned_init, nb::arg("max_positions"), nb::arg("dim"), nb::arg("position_offset"),
           nb::arg("scale"), nb::arg("layer_norm"), nb::arg("eps"), nb::arg("dropout"), nb::arg("dtype"))
      .def_prop_ro("table", [](learned_py& l) {
        return std::visit([&](auto& t) {
          const auto v = t.table();
          return nb::cast(rw_view(v.data(), std::array<std::size_t, 2>{static_cast<std::size_t>(v.extent(0)),
                                                                       static_cast<std::size_t>(v.extent(1))},
                                  nb::find(&l)));
        }, l.m);
      })
      .def_prop_ro("gamma", [](learned_py& l) {
        return std::visit([&](auto& t) {
          const auto v = t.gamma();
          return nb::cast(rw_view(v.data(), std::array<std::size_t, 1>{static_cast<std::size_t>(v.extent(0))}, nb::find(&l)));
        }, l.m);
      })
      .def_prop_ro("beta", [](learned_py& l) {
        return std::visit([&](auto& t) {
          const auto v = t.beta();
          return nb::cast(rw_view(v.data(), std::array<std::size_t, 1>{static_cast<std::size_t>(v.extent(0))}, nb::find(&l)));
        }, l.m);
      })
      .def_prop_ro("table_grad", [](learned_py& l) {
        return std::visit([&](const auto& t) {
          const auto v = t.table_grad();
          return nb::cast(ro_view(v.data(), std::array<std::size_t, 2>{static_cast<std::size_t>(v.extent(0)),
                                                                       static_cast<std::size_t>(v.extent(1))},
                                  nb::find(&l)));
        }, l.m);
      })
      .def_prop_ro("gamma_grad", [](learned_py& l) {
        return std::visit([&](const auto& t) {
          const auto v = t.gamma_grad();
          return nb::cast(ro_view(v.data(), std::array<std::size_t, 1>{static_cast<std::size_t>(v.extent(0))}, nb::find(&l)));
        }, l.m);
      })
      .def_prop_ro("beta_grad", [](learned_py& l) {
        return std::visit([&](const auto& t) {
          const auto v = t.beta_grad();
          return nb::cast(ro_view(v.data(), std::array<std::size_t, 1>{static_cast<std::size_t>(v.extent(0))}, nb::find(&l)));
        }, l.m);
      })
      .def("zero_grad", [](learned_py& l) { std::visit([](auto& t) { t.zero_grad(); }, l.m); })
      .def("init_normal", [](learned_py& l, std::uint64_t seed, double stddev) {
        run([&] { return std::visit([&](auto& t) { return t.try_init_normal(seed, stddev); }, l.m); });
      }, nb::arg("seed"), nb::arg("stddev"))
      .def("forward", &learned_forward, nb::arg("x").noconvert(), nb::arg("out").noconvert(),
           nb::arg("positions").noconvert().none(), nb::arg("starts"), nb::arg("offset"), nb::arg("train"), nb::arg("seed"),
           nb::arg("cache"))
      .def("backward", &learned_backward, nb::arg("grad_out").noconvert(), nb::arg("grad_in").noconvert(),
           nb::arg("cache"));
}

}  // namespace pyposenc
