// Every layer's positional treatment from a Hugging Face config.json (posenc::try_model_plan_from_hf) and from
// GGUF metadata (posenc::try_read_gguf_model_plan): the hand-written public configs of tests/data/hf/models/
// and the GGUF files of tests/data/gguf/models.json against tests/golden/models.txt (gen_models.py: each
// family's rules and frequencies from its reference implementation or llama.cpp's loader, in mpmath), plus
// the rules' edges and the rejected configs and files.
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <posenc/io/gguf.hpp>
#include <posenc/io/hf_config.hpp>
#include <posenc/rope_plan.hpp>

#include "golden.hpp"

#ifndef POSENC_HF_DATA_DIR
#define POSENC_HF_DATA_DIR "tests/data/hf"
#endif
#ifndef POSENC_GGUF_DATA_DIR
#define POSENC_GGUF_DATA_DIR "tests/data/gguf"
#endif

namespace {

using posenc::attention_kind;
using posenc::index_t;
using posenc_test::golden_case;

std::string model_file(const std::string& name) { return std::string(POSENC_HF_DATA_DIR) + "/models/" + name; }

class ModelPlanGolden : public ::testing::TestWithParam<std::string> {};

// Per layer: rope, attention kind, window; each RoPE layer's plan (built from its config at 8192 positions)
// against the expected frequencies to 4e-15 relative (pow and the YaRN ramp in double: up to ~1e-15 seen), its pair style, rotary dim and magnitude; the
// temperature factor at the listed positions to 1e-15 relative.
TEST_P(ModelPlanGolden, EveryLayerMatches) {
  const auto cases = posenc_test::load_golden("models.txt");
  const golden_case* c = nullptr;
  for (const auto& k : cases)
    if (k.name == GetParam()) c = &k;
  ASSERT_NE(c, nullptr);
  posenc::model_positional_plan m;
  const posenc::status s =
      c->has("gguf") ? posenc::try_read_gguf_model_plan(std::string(POSENC_GGUF_DATA_DIR) + "/" + c->str("gguf"), m)
                     : posenc::try_model_plan_from_hf_file(model_file(c->str("config")), m);
  ASSERT_TRUE(s.ok()) << s.message();
  const index_t layers = c->integer("layers");
  ASSERT_EQ(m.num_layers(), layers);
  if (c->has("mrope_section")) EXPECT_EQ(m.mrope_section, c->array("mrope_section").ivalues);
  else EXPECT_TRUE(m.mrope_section.empty());
  const auto& rope = c->array("rope").ivalues;
  const auto& attention = c->array("attention").ivalues;
  const auto& window = c->array("window").ivalues;
  const auto& plan = c->array("plan").ivalues;
  const auto& inv = c->array("plan_inv_freq");
  const auto pmax = static_cast<std::size_t>(inv.shape[1]);
  const auto& temp_pos = c->array("temp_positions").ivalues;
  const auto& temp = c->array("temp_scale").values;
  for (index_t i = 0; i < layers; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const posenc::layer_positional& l = m.layer(i);
    SCOPED_TRACE(c->name + " layer " + std::to_string(i));
    EXPECT_EQ(l.rope, rope[u] == 1);
    EXPECT_EQ(static_cast<int>(l.attention), attention[u]);
    EXPECT_EQ(l.window, window[u]);
    for (std::size_t t = 0; t < temp_pos.size(); ++t) {
      const double want = temp[u * temp_pos.size() + t];
      EXPECT_NEAR(l.temperature.scale(temp_pos[t]), want, 1e-15 * want) << "position " << temp_pos[t];
    }
    if (plan[u] < 0) continue;
    const auto k = static_cast<std::size_t>(plan[u]);
    const posenc::rope_plan p = posenc::make_rope_plan(l.config, 8192);
    ASSERT_EQ(p.rotary_dim(), c->array("plan_rotary_dim").ivalues[k]);
    EXPECT_EQ(l.config.style == posenc::rope_style::interleaved, c->array("plan_interleaved").ivalues[k] == 1);
    EXPECT_NEAR(p.magnitude(), c->array("plan_magnitude").values[k], 1e-15);
    for (index_t j = 0; j < p.pairs(); ++j) {
      const double want = inv.values[k * pmax + static_cast<std::size_t>(j)];
      EXPECT_NEAR(p.inv_freq()[static_cast<std::size_t>(j)], want, 4e-15 * want) << "pair " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelPlanGolden, ::testing::ValuesIn(posenc_test::golden_case_names("models.txt")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

nlohmann::json small(const std::string& type, int layers) {
  return {{"model_type", type}, {"num_hidden_layers", layers}, {"hidden_size", 64}, {"num_attention_heads", 4},
          {"max_position_embeddings", 4096}, {"rope_theta", 10000.0}};
}

std::string error_of(const nlohmann::json& j) {
  posenc::model_positional_plan m;
  m.model_type = "untouched";
  const posenc::status s = posenc::try_model_plan_from_hf(j, m);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(m.model_type, "untouched") << "the output changed on a rejected config";
  return std::string(s.message());
}

TEST(ModelPlan, Llama4ExplicitNoRopeLayersAndNumericTuningFlag) {
  nlohmann::json j = small("llama4_text", 4);
  j["no_rope_layers"] = {1, 0, 0, 1};
  j["attn_temperature_tuning"] = 4;  // Meta's checkpoints write a number; nonzero is on
  const auto m = posenc::model_plan_from_hf(j);
  EXPECT_TRUE(m.layer(0).rope);
  EXPECT_FALSE(m.layer(1).rope);
  EXPECT_EQ(m.layer(1).attention, attention_kind::full);
  EXPECT_EQ(m.layer(0).attention, attention_kind::chunked);
  EXPECT_EQ(m.layer(0).window, 8192);
  EXPECT_TRUE(m.layer(2).temperature.enabled);
  EXPECT_FALSE(m.layer(3).temperature.enabled);
  EXPECT_EQ(m.layer(0).config.style, posenc::rope_style::interleaved);
  j["attn_temperature_tuning"] = false;
  EXPECT_FALSE(posenc::model_plan_from_hf(j).layer(1).temperature.enabled);
  EXPECT_EQ(posenc::model_plan_from_hf(j).layer(1).temperature.scale(1 << 20), 1.0);
}

TEST(ModelPlan, QwenSlidesFromMaxWindowLayers) {
  nlohmann::json j = small("qwen2", 6);
  j["use_sliding_window"] = true;
  j["sliding_window"] = 4096;
  j["max_window_layers"] = 4;
  const auto m = posenc::model_plan_from_hf(j);
  for (index_t i = 0; i < 6; ++i)
    EXPECT_EQ(m.layer(i).attention, i >= 4 ? attention_kind::sliding : attention_kind::full) << i;
  j["use_sliding_window"] = false;
  EXPECT_EQ(posenc::model_plan_from_hf(j).layer(5).attention, attention_kind::full);
}

TEST(ModelPlan, ModernBertNullLocalThetaIsTheGlobalBase) {
  nlohmann::json j = small("modernbert", 4);
  j["global_rope_theta"] = 160000.0;
  j["local_rope_theta"] = nullptr;
  const auto m = posenc::model_plan_from_hf(j);
  EXPECT_EQ(m.layer(1).config.base, 160000.0);
  j.erase("local_rope_theta");
  EXPECT_EQ(posenc::model_plan_from_hf(j).layer(1).config.base, 10000.0);  // HF's default
  EXPECT_EQ(posenc::model_plan_from_hf(j).layer(0).config.base, 160000.0);
}

TEST(ModelPlan, LayerTypesWinOverTheFamilyRule) {
  nlohmann::json j = small("gemma2", 3);
  j["sliding_window"] = 16;
  j["layer_types"] = {"full_attention", "full_attention", "sliding_attention"};
  const auto m = posenc::model_plan_from_hf(j);
  EXPECT_EQ(m.layer(0).attention, attention_kind::full);
  EXPECT_EQ(m.layer(2).attention, attention_kind::sliding);
  EXPECT_EQ(m.layer(2).window, 16);
}

TEST(ModelPlan, OtherFamiliesAreUniform) {
  const auto m = posenc::model_plan_from_hf(small("llama", 3));
  for (index_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(m.layer(i).rope);
    EXPECT_EQ(m.layer(i).attention, attention_kind::full);
    EXPECT_EQ(m.layer(i).config.style, posenc::rope_style::half_split);
  }
  EXPECT_EQ(posenc::model_plan_from_hf(small("glm", 2)).layer(1).config.style, posenc::rope_style::interleaved);
}

TEST(ModelPlan, RejectedConfigsNameTheKey) {
  nlohmann::json j = small("llama", 3);
  j.erase("num_hidden_layers");
  EXPECT_NE(error_of(j).find("num_hidden_layers is missing"), std::string::npos) << error_of(j);
  j = small("gemma2", 2);
  EXPECT_NE(error_of(j).find("sliding_window is missing"), std::string::npos) << error_of(j);
  j = small("gpt_oss", 2);
  j["sliding_window"] = 128;
  j["layer_types"] = {"sliding_attention"};
  EXPECT_NE(error_of(j).find("layer_types has 1 entries; num_hidden_layers=2"), std::string::npos) << error_of(j);
  j["layer_types"] = {"sliding_attention", "linear_attention"};
  EXPECT_NE(error_of(j).find("layer_types[1]=\"linear_attention\" is not supported (known: full_attention"),
            std::string::npos)
      << error_of(j);
  j = small("llama4_text", 2);
  j["no_rope_layers"] = {1, 2};
  EXPECT_NE(error_of(j).find("no_rope_layers[1]=2 must be 0 (NoPE) or 1 (RoPE)"), std::string::npos) << error_of(j);
  j = small("llama4_text", 2);
  j["attn_temperature_tuning"] = "yes";
  EXPECT_NE(error_of(j).find("attn_temperature_tuning=\"yes\" must be true, false or a number"), std::string::npos)
      << error_of(j);
  const posenc::model_positional_plan m = posenc::model_plan_from_hf(small("llama", 2));
  EXPECT_NE(m.check_layer(2).message().find("layer 2 is not in [0, 2)"), std::string::npos);
  EXPECT_FALSE(m.check_layer(-1).ok());
}

TEST(ModelPlan, MissingFileIsAnIoError) {
  posenc::model_positional_plan m;
  EXPECT_EQ(posenc::try_model_plan_from_hf_file(model_file("no_such.json"), m).code(), posenc::errc::io_error);
}

}  // namespace
