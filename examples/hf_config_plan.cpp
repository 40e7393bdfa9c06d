// Loads a Hugging Face model's config.json and prints the RoPE plan posenc builds from it: the model facts,
// the rotated window, the scaling with its parameters, the magnitude on cos/sin, the softmax logit scale and the
// first and last inverse frequencies.
//
// Usage: hf_config_plan path/to/config.json [seq_len]
//   seq_len: the sequence length the plan serves (largest position + 1); only dynamic NTK and LongRoPE depend
//   on it, and posenc rejects them without it (0, the default, states no length).
// Exit status: 0, 1 when posenc rejects the config (one line on stderr), 2 on bad usage.
//
// Build and run: bash scripts/run_examples.sh (or cmake --build build --target hf_config_plan; needs
// nlohmann-json3-dev).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <posenc/io/hf_config.hpp>
#include <posenc/mrope_plan.hpp>

namespace {

const char* style_name(posenc::rope_style s) {
  return s == posenc::rope_style::interleaved ? "interleaved (x[2i], x[2i+1])" : "half_split (x[i], x[i+R/2])";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

std::string attention_factor(const posenc::rope_scaling& s) {
  return s.attention_factor ? num(*s.attention_factor) : std::string("derived");
}

/// The scaling type and every parameter it uses, as the config named them.
std::string describe(const posenc::rope_scaling& s, posenc::index_t seq_len) {
  const std::string m = num(static_cast<double>(s.original_max_positions));
  switch (s.type) {
    case posenc::rope_scaling_type::none: return "none";
    case posenc::rope_scaling_type::linear: return "linear (factor " + num(s.factor) + ")";
    case posenc::rope_scaling_type::ntk: return "ntk (base_rescale_factor " + num(s.factor) + ")";
    case posenc::rope_scaling_type::dynamic_ntk:
      return "dynamic (factor " + num(s.factor) + ", max_position_embeddings " + m + ", policy " +
             posenc::to_string(s.ntk_policy) + ")";
    case posenc::rope_scaling_type::yarn:
    case posenc::rope_scaling_type::deepseek_yarn:
      return std::string(posenc::to_string(s.type)) + " (factor " +
             num(s.factor) + ", original_max_position_embeddings " + m + ", beta_fast " + num(s.beta_fast) +
             ", beta_slow " + num(s.beta_slow) + ", mscale " + num(s.mscale) + ", mscale_all_dim " +
             num(s.mscale_all_dim) + ", attention_factor " + attention_factor(s) + ", truncate " +
             (s.truncate ? "true" : "false") + ")";
    case posenc::rope_scaling_type::llama3:
      return "llama3 (factor " + num(s.factor) + ", low_freq_factor " + num(s.low_freq_factor) + ", high_freq_factor " +
             num(s.high_freq_factor) + ", original_max_position_embeddings " + m + ")";
    case posenc::rope_scaling_type::longrope: {
      bool use_long = false;
      switch (s.long_policy) {  // the same rule make_rope_plan applies, to say which list this plan uses
        case posenc::longrope_policy::per_length: use_long = seq_len > s.original_max_positions; break;
        case posenc::longrope_policy::past_original: use_long = seq_len > s.original_max_positions + 1; break;
        case posenc::longrope_policy::always_short: break;
        case posenc::longrope_policy::always_long: use_long = true; break;
      }
      return "longrope (factor " + num(s.factor) + ", original_max_position_embeddings " + m + ", attention_factor " +
             attention_factor(s) + ", " + std::to_string(s.short_factor.size()) + " short and " +
             std::to_string(s.long_factor.size()) + " long factors, policy " + posenc::to_string(s.long_policy) +
             "; this plan uses the " + (use_long ? "long" : "short") + " factors)";
    }
  }
  return "?";
}

void print_freqs(const std::vector<double>& w, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < last; ++i) std::printf("  w[%zu] = %.17g\n", i, w[i]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: hf_config_plan path/to/config.json [seq_len]\n");
    return 2;
  }
  const std::string path = argv[1];
  posenc::index_t seq_len = 0;
  if (argc == 3) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(argv[2], &end, 10);
    if (errno != 0 || end == argv[2] || *end != '\0' || n < 0) {
      std::fprintf(stderr, "hf_config_plan: seq_len=\"%s\" must be an integer >= 0\n", argv[2]);
      return 2;
    }
    seq_len = static_cast<posenc::index_t>(n);
  }

  try {
    const posenc::hf_rope_info info = posenc::rope_config_from_hf_file(path);
    const posenc::rope_config& cfg = info.config;
    const posenc::rope_plan plan = posenc::make_rope_plan(cfg, seq_len);

    std::printf("config          %s\n", path.c_str());
    std::printf("model_type      %s\n", info.model_type.empty() ? "(none)" : info.model_type.c_str());
    std::printf("heads           %lld query, %lld key/value\n", static_cast<long long>(info.num_attention_heads),
                static_cast<long long>(info.num_key_value_heads));
    std::printf("max_positions   %lld\n", static_cast<long long>(info.max_position_embeddings));
    std::printf("head_dim        %lld\n", static_cast<long long>(plan.head_dim()));
    std::printf("rotary_dim      %lld (partial_rotary_factor %s), offset %lld\n",
                static_cast<long long>(plan.rotary_dim()), num(info.partial_rotary_factor).c_str(),
                static_cast<long long>(plan.rotary_offset()));
    std::printf("style           %s\n", style_name(plan.style()));
    std::printf("base            %s\n", num(cfg.base).c_str());
    std::printf("rope_type       %s\n", info.rope_type.c_str());
    std::printf("scaling         %s\n", describe(cfg.scaling, seq_len).c_str());
    if (!info.mrope_section.empty())
      std::printf("mrope_section   [%lld, %lld, %lld] (%s)\n", static_cast<long long>(info.mrope_section[0]),
                  static_cast<long long>(info.mrope_section[1]), static_cast<long long>(info.mrope_section[2]),
                  posenc::to_string(info.mrope_interleaved ? posenc::mrope_layout::interleaved : posenc::mrope_layout::chunked));
    std::printf("seq_len         %lld\n", static_cast<long long>(seq_len));
    std::printf("magnitude       %.17g  (multiplies cos and sin)\n", plan.magnitude());
    std::printf("logit_scale     %.17g  (multiplies q.k/sqrt(d) before the softmax)\n", plan.logit_scale());

    const std::vector<double>& w = plan.inv_freq();
    const std::size_t shown = 4;
    std::printf("inv_freq        %zu pairs\n", w.size());
    if (w.size() <= 2 * shown) {
      print_freqs(w, 0, w.size());
    } else {
      print_freqs(w, 0, shown);
      std::printf("  ...\n");
      print_freqs(w, w.size() - shown, w.size());
    }
  } catch (const posenc::argument_error& e) {
    std::fprintf(stderr, "hf_config_plan: %s\n", e.what());
    return 1;
  }
  return 0;
}
