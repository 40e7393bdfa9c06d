// Reads a GGUF model file's metadata and prints the RoPE plan posenc builds from it: the architecture and the
// pair style llama.cpp uses for it, the head and rotated dims, the base, the scaling (as the file states it and
// as posenc maps it), per-pair factors from rope_freqs.weight, MRoPE sections, the magnitude on cos/sin, the
// softmax logit scale and the first and last inverse frequencies. Only the metadata and the small RoPE factor
// tensors are read, so a multi-gigabyte model is read in milliseconds.
//
// Usage: gguf_plan [model.gguf] [seq_len]
//   model.gguf defaults to the Llama-3-shaped test file tests/data/gguf/llama3.gguf.
//   seq_len: the sequence length the plan serves (largest position + 1); only LongRoPE and dynamic NTK depend
//   on it, and posenc rejects them without it (0, the default, states no length).
// Exit status: 0, 1 when posenc rejects the file (one line on stderr), 2 on bad usage.
//
// Build and run: bash scripts/run_examples.sh (or cmake --build build --target gguf_plan).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <posenc/io/gguf.hpp>

#ifndef POSENC_GGUF_DEFAULT_FILE
#define POSENC_GGUF_DEFAULT_FILE "tests/data/gguf/llama3.gguf"  // the build defines it as an absolute path
#endif

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

const char* style_name(posenc::rope_style s) {
  return s == posenc::rope_style::interleaved ? "interleaved (x[2i], x[2i+1])" : "half_split (x[i], x[i+R/2])";
}

std::string describe(const posenc::rope_scaling& s) {
  const std::string m = num(static_cast<double>(s.original_max_positions));
  const std::string af = s.attention_factor ? num(*s.attention_factor) : std::string("derived");
  switch (s.type) {
    case posenc::rope_scaling_type::none: return "none";
    case posenc::rope_scaling_type::linear: return "linear (factor " + num(s.factor) + ")";
    case posenc::rope_scaling_type::ntk: return "ntk (factor " + num(s.factor) + ")";
    case posenc::rope_scaling_type::dynamic_ntk: return "dynamic ntk (factor " + num(s.factor) + ", M " + m + ")";
    case posenc::rope_scaling_type::yarn:
      return "yarn (factor " + num(s.factor) + ", M " + m + ", beta_fast " + num(s.beta_fast) + ", beta_slow " +
             num(s.beta_slow) + ", attention_factor " + af + ")";
    case posenc::rope_scaling_type::deepseek_yarn:
      return "deepseek_yarn (factor " + num(s.factor) + ", M " + m + ", mscale " + num(s.mscale) + ", mscale_all_dim " +
             num(s.mscale_all_dim) + ")";
    case posenc::rope_scaling_type::llama3:
      return "llama3 (factor " + num(s.factor) + ", low " + num(s.low_freq_factor) + ", high " + num(s.high_freq_factor) +
             ", M " + m + ")";
    case posenc::rope_scaling_type::longrope:
      return "longrope (factor " + num(s.factor) + ", M " + m + ", attention_factor " + af + ", " +
             std::to_string(s.short_factor.size()) + " short and " + std::to_string(s.long_factor.size()) +
             " long factors)";
  }
  return "?";
}

void print_freqs(const std::vector<double>& w, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < last; ++i) std::printf("  w[%zu] = %.17g\n", i, w[i]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 3) {
    std::fprintf(stderr, "usage: gguf_plan [model.gguf] [seq_len]\n");
    return 2;
  }
  const std::string path = argc >= 2 ? argv[1] : POSENC_GGUF_DEFAULT_FILE;
  posenc::index_t seq_len = 0;
  if (argc == 3) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(argv[2], &end, 10);
    if (errno != 0 || end == argv[2] || *end != '\0' || n < 0) {
      std::fprintf(stderr, "gguf_plan: seq_len=\"%s\" must be an integer >= 0\n", argv[2]);
      return 2;
    }
    seq_len = static_cast<posenc::index_t>(n);
  }

  // The no-throw forms: a bad file is a status, printed on one line.
  posenc::gguf_rope_info info;
  posenc::rope_plan plan;
  posenc::status s = posenc::try_read_gguf_rope(path, info);
  if (s.ok()) s = posenc::try_make_rope_plan(info.config, seq_len, plan);
  if (!s.ok()) {
    std::fprintf(stderr, "gguf_plan: %s\n", s.c_str());
    return 1;
  }
  const posenc::rope_config& cfg = info.config;
  std::printf("file            %s (GGUF v%u)\n", path.c_str(), info.version);
  std::printf("architecture    %s%s%s\n", info.architecture.c_str(), info.name.empty() ? "" : ", ", info.name.c_str());
  std::printf("context         %lld (original %lld)\n", static_cast<long long>(info.context_length),
              static_cast<long long>(info.original_context_length));
  std::printf("heads           %lld query, %lld key/value\n", static_cast<long long>(info.head_count),
              static_cast<long long>(info.head_count_kv));
  std::printf("head_dim        %lld\n", static_cast<long long>(plan.head_dim()));
  std::printf("rotary_dim      %lld, offset %lld\n", static_cast<long long>(plan.rotary_dim()),
              static_cast<long long>(plan.rotary_offset()));
  std::printf("style           %s, llama.cpp rope type %s\n", style_name(plan.style()), info.rope_type.c_str());
  std::printf("base            %s\n", num(cfg.base).c_str());
  std::printf("scaling         %s (file: %s)\n", describe(cfg.scaling).c_str(),
              info.file_scaling_type.empty() ? "no rope.scaling.type" : info.file_scaling_type.c_str());
  if (!cfg.freq_factors.empty())
    std::printf("freq_factors    %zu from %s, first %s, last %s\n", cfg.freq_factors.size(), info.freq_factors_tensor.c_str(),
                num(cfg.freq_factors.front()).c_str(), num(cfg.freq_factors.back()).c_str());
  if (!info.mrope_sections.empty()) {
    std::printf("mrope_sections ");
    for (posenc::index_t v : info.mrope_sections) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n");
  }
  std::printf("seq_len         %lld\n", static_cast<long long>(seq_len));
  std::printf("magnitude       %.17g  (multiplies cos and sin)\n", plan.magnitude());
  std::printf("logit_scale     %.17g  (multiplies q.k/sqrt(d) before the softmax)\n", plan.logit_scale());
  const std::vector<double>& w = plan.inv_freq();
  const std::size_t shown = 3;
  std::printf("inv_freq        %zu pairs\n", w.size());
  if (w.size() <= 2 * shown) {
    print_freqs(w, 0, w.size());
  } else {
    print_freqs(w, 0, shown);
    std::printf("  ...\n");
    print_freqs(w, w.size() - shown, w.size());
  }
  return 0;
}
