// libFuzzer target for the GGUF reader (include/posenc/io/gguf.hpp). Any input must either parse, with the
// invariants below holding, or be rejected with a status naming the defect: no crash, no sanitizer report, no
// exception out of the noexcept entry points, no allocation beyond a small multiple of the input's size.
//
// Build and run: bash scripts/fuzz.sh gguf [seconds]   (clang, -fsanitize=fuzzer,address,undefined; seeds:
// tests/data/gguf/*.gguf)
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <posenc/io/gguf.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  posenc::gguf_metadata m;
  const posenc::status s = posenc::try_parse_gguf_metadata(data, size, m);
  if (s.ok()) {
    // Invariants of an accepted directory.
    if (m.version != 2 && m.version != 3) std::abort();
    if (m.alignment == 0 || (m.alignment & (m.alignment - 1)) != 0) std::abort();
    for (const posenc::gguf_tensor_info& t : m.tensors) {
      if (t.offset % m.alignment != 0 || t.file_offset > size || t.nbytes > size - t.file_offset) std::abort();
      if (t.dims.size() > 4 || t.elements() < 0) std::abort();
    }
    for (const posenc::gguf_kv& e : m.kv) {
      const posenc::gguf_value& v = e.value;
      if (v.is_array() && v.element_type == posenc::gguf_type::array) std::abort();
      if (v.is_array() && v.element_type != posenc::gguf_type::string &&
          v.bytes.size() != v.count * posenc::detail::gguf::scalar_size(v.element_type))
        std::abort();
      if (v.is_array() && v.element_type == posenc::gguf_type::string && v.strings.size() != v.count) std::abort();
    }
  } else if (s.code() != posenc::errc::invalid_file || s.message().empty()) {
    std::abort();
  }

  posenc::gguf_rope_info info;
  const posenc::status r = posenc::try_parse_gguf_rope(data, size, info);
  if (r.ok()) {
    // The mapping validated the config: its plan must build. Length 1, the length the mapping validated at: a
    // length-dependent scaling (dynamic NTK, LongRoPE) has no plan without one (make_rope_plan rejects 0).
    posenc::rope_plan plan;
#if POSENC_HAS_EXCEPTIONS
    try {
      posenc::make_rope_plan(info.config, 1, plan);
    } catch (...) {
      std::abort();
    }
#endif
  } else if (r.message().empty() || r.code() == posenc::errc::io_error) {
    std::abort();
  }

  // The per-layer plan: every layer's configuration must plan (NoPE layers carry the model's), windows are
  // >= 0, sliding and chunked layers have one, and nothing is accepted that the RoPE reader rejected.
  posenc::model_positional_plan model;
  const posenc::status ms = posenc::try_parse_gguf_model_plan(data, size, model);
  if (ms.ok()) {
    if (!r.ok() || model.layers.empty()) std::abort();
    for (const posenc::layer_positional& l : model.layers) {
      if (l.window < 0 || ((l.attention != posenc::attention_kind::full) != (l.window > 0))) std::abort();
      posenc::rope_plan plan;
      if (!posenc::try_make_rope_plan(l.config, 1, plan).ok()) std::abort();
    }
  } else if (ms.message().empty() || ms.code() == posenc::errc::io_error) {
    std::abort();
  }
  return 0;
}
