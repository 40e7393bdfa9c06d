// A consumer of the hf_config component: a Hugging Face config.json (as text) to a RoPE plan.
#include <cstdio>

#include <nlohmann/json.hpp>
#include <posenc/io/hf_config.hpp>

int main() {
  const auto cfg = nlohmann::json::parse(R"({"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0})");
  const posenc::rope_plan plan = posenc::make_rope_plan(posenc::rope_config_from_hf(cfg).config);
  const bool ok = plan.head_dim() == 128 && plan.pairs() == 64;
  std::printf("posenc hf_config consumer: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
