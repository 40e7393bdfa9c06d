// posenc Python bindings: T5 relative-position buckets.
#include "common.hpp"

namespace pyposenc {
namespace {

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

void bind_t5(nb::module_& m) {
  m.def("t5_relative_bucket", &t5_relative_bucket, nb::arg("relative_position"), nb::arg("bidirectional"),
        nb::arg("num_buckets"), nb::arg("max_distance"));
  m.def("t5_relative_bucket_array", &t5_relative_bucket_array, nb::arg("relative_position").noconvert(),
        nb::arg("out").noconvert(), nb::arg("bidirectional"), nb::arg("num_buckets"), nb::arg("max_distance"));
  m.def("t5_bucket_table", &t5_bucket_table, nb::arg("out").noconvert(), nb::arg("bidirectional"),
        nb::arg("num_buckets"), nb::arg("max_distance"), nb::arg("query_offset"));
}

}  // namespace pyposenc
