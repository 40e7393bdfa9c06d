// Vision towers from a Hugging Face config.json (posenc::try_vision_plan_from_hf): the hand-written public
// configs of tests/data/hf/models/ against tests/golden/vision.txt (gen_vision.py: each tower's 2D RoPE,
// token order and block attention from its reference implementation, in mpmath), the rotation of a head at
// sample patch positions on every ISA and dtype, and the rejected configs and arguments.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <posenc/io/hf_config.hpp>
#include <posenc/mrope.hpp>

#include "test_util.hpp"

#ifndef POSENC_HF_DATA_DIR
#define POSENC_HF_DATA_DIR "tests/data/hf"
#endif

namespace {

using posenc::index_t;
using namespace posenc_test;

std::string model_file(const std::string& name) { return std::string(POSENC_HF_DATA_DIR) + "/models/" + name; }

const golden_case& vision_case(const std::string& name) {
  static const std::vector<golden_case> cases = load_golden("vision.txt");
  return find_case(cases, name);
}

posenc::vision_positional_plan plan_of(const golden_case& c) {
  posenc::vision_positional_plan v;
  const posenc::status s = posenc::try_vision_plan_from_hf_file(model_file(c.str("config")), v);
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

class VisionGolden : public ::testing::TestWithParam<std::string> {};

// The tower's facts, every block's attention, the 2D RoPE's frequencies (4e-15 relative: pow in double) and
// axes, and the token order of a sample grid (exact).
TEST_P(VisionGolden, PlanMatches) {
  const golden_case& c = vision_case(GetParam());
  const posenc::vision_positional_plan v = plan_of(c);
  EXPECT_EQ(v.head_dim, c.integer("head_dim"));
  EXPECT_EQ(v.base, c.num("base"));
  EXPECT_EQ(static_cast<int>(v.layout), c.integer("layout"));
  EXPECT_EQ(v.spatial_merge_size, c.integer("merge"));
  EXPECT_EQ(v.max_patches_per_side, c.integer("max_side"));
  EXPECT_EQ(v.style, posenc::rope_style::half_split);
  ASSERT_EQ(v.num_layers(), c.integer("layers"));
  for (index_t i = 0; i < v.num_layers(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    EXPECT_EQ(v.layer(i).windowed, c.array("windowed").ivalues[u] == 1) << "block " << i;
    EXPECT_EQ(v.layer(i).window, c.array("window").ivalues[u]) << "block " << i;
  }
  const posenc::mrope_plan rope = v.make_rope();
  const auto& w = c.array("inv_freq").values;
  const auto& axis = c.array("axis").ivalues;
  ASSERT_EQ(rope.plan().pairs(), static_cast<index_t>(w.size()));
  EXPECT_EQ(rope.plan().head_dim(), v.head_dim);
  for (std::size_t j = 0; j < w.size(); ++j) {
    EXPECT_NEAR(rope.plan().inv_freq()[j], w[j], 4e-15 * w[j]) << "pair " << j;
    EXPECT_EQ(rope.axis()[j], axis[j]) << "pair " << j;
  }
  const auto& g = c.array("grid").ivalues;
  const std::vector<std::int64_t> ids = posenc::vision_positions(g[0], g[1], g[2], v.spatial_merge_size);
  const auto& want = c.array("positions").ivalues;
  ASSERT_EQ(ids.size(), want.size());
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], want[i]) << "entry " << i;
}

INSTANTIATE_TEST_SUITE_P(Towers, VisionGolden, ::testing::ValuesIn(golden_case_names("vision.txt")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

class VisionRotation : public IsaTest<std::string> {};

// One head rotated at each sample (row, column), as HF's apply_rotary_pos_emb_vision / Pixtral's
// apply_rotary_pos_emb compute it (cat(freqs, freqs), rotate_half), through apply_mrope in every dtype.
template <class T>
void check_rotation(const golden_case& c, const posenc::mrope_plan& rope) {
  const auto& x = c.array("x").values;
  const auto& rp = c.array("rot_pos").ivalues;
  const auto& want = c.array("rotated").values;
  const index_t d = static_cast<index_t>(x.size()), k = static_cast<index_t>(rp.size() / 2);
  std::vector<T> buf(static_cast<std::size_t>(k * d));
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<T>(x[i % x.size()]);
  std::vector<std::int64_t> thw(static_cast<std::size_t>(3 * k), 0);
  for (index_t t = 0; t < k; ++t) {
    thw[static_cast<std::size_t>(k + t)] = rp[static_cast<std::size_t>(2 * t)];
    thw[static_cast<std::size_t>(2 * k + t)] = rp[static_cast<std::size_t>(2 * t + 1)];
  }
  posenc::apply_mrope(rope, posenc::strided_view<T, 4>(buf.data(), {1, k, 1, d}), posenc::mrope_positions::shared(thw.data(), k));
  for (std::size_t i = 0; i < buf.size(); ++i)
    EXPECT_NEAR(as_double(buf[i]), want[i], tolerance<T>(want[i])) << dtype_info<T>::name << " token " << i / x.size()
                                                                   << " feature " << i % x.size();
}

TEST_P(VisionRotation, AllDtypes) {
  const golden_case& c = vision_case(param());
  const posenc::mrope_plan rope = plan_of(c).make_rope();
  check_rotation<double>(c, rope);
  check_rotation<float>(c, rope);
  check_rotation<Eigen::half>(c, rope);
  check_rotation<Eigen::bfloat16>(c, rope);
}

INSTANTIATE_TEST_SUITE_P(Towers, VisionRotation,
                         ::testing::Combine(::testing::ValuesIn(golden_case_names("vision.txt")), ::testing::ValuesIn(all_isas())),
                         IsaParamName{});

// Mistral's own format rotates adjacent pairs (mistral-inference view_as_complex): the same frequencies and
// axes with the interleaved style.
TEST(VisionPlan, InterleavedStyleKeepsTheFrequencies) {
  posenc::hf_options o;
  o.style = posenc::rope_style::interleaved;
  const posenc::vision_positional_plan v = posenc::vision_plan_from_hf_file(model_file("pixtral_12b.json"), o);
  EXPECT_EQ(v.style, posenc::rope_style::interleaved);
  const posenc::mrope_plan a = v.make_rope();
  const posenc::mrope_plan b = posenc::make_vision_rope_plan(64, 10000.0, posenc::vision_rope_layout::alternating);
  EXPECT_EQ(a.plan().style(), posenc::rope_style::interleaved);
  EXPECT_EQ(a.plan().inv_freq(), b.plan().inv_freq());
  EXPECT_EQ(a.axis(), b.axis());
}

// The split layout is the sectioned plan of posenc/mrope_plan.hpp with sections {0, D/4, D/4}.
TEST(VisionPlan, SplitIsTheSectionedPlan) {
  const posenc::mrope_plan a = posenc::make_vision_rope_plan(80, 10000.0, posenc::vision_rope_layout::split);
  const posenc::rope_plan b = posenc::make_sectioned_rope_plan(80, 10000.0, {0, 20, 20});
  EXPECT_EQ(a.plan().inv_freq(), b.inv_freq());
  EXPECT_EQ(a.sections(), (std::array<index_t, 3>{0, 20, 20}));
}

std::string error_of(const nlohmann::json& j) {
  posenc::vision_positional_plan v;
  v.model_type = "untouched";
  const posenc::status s = posenc::try_vision_plan_from_hf(j, v);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(v.model_type, "untouched") << "the output changed on a rejected config";
  return std::string(s.message());
}

TEST(VisionPlan, RejectedConfigsNameTheKey) {
  nlohmann::json j = {{"model_type", "llama"}, {"num_hidden_layers", 2}};
  EXPECT_NE(error_of(j).find("model_type=\"llama\" has no vision tower posenc reads (known: qwen2_vl"), std::string::npos)
      << error_of(j);
  j = {{"model_type", "llava"}, {"vision_config", {{"model_type", "siglip_vision_model"}}}};
  EXPECT_NE(error_of(j).find("vision_config.model_type=\"siglip_vision_model\""), std::string::npos) << error_of(j);
  j = {{"model_type", "qwen2_5_vl"}, {"vision_config", {{"depth", 8}, {"hidden_size", 1280}, {"num_heads", 16}}}};
  EXPECT_NE(error_of(j).find("fullatt_block_indexes[1]=15"), std::string::npos) << error_of(j);  // default past depth 8
  j["vision_config"]["fullatt_block_indexes"] = {3, 9};
  EXPECT_NE(error_of(j).find("fullatt_block_indexes[1]=9 is not a block (depth=8)"), std::string::npos) << error_of(j);
  j["vision_config"]["fullatt_block_indexes"] = {3};
  j["vision_config"]["window_size"] = 20;
  EXPECT_NE(error_of(j).find("vision_config.window_size=20 is smaller than one merged unit"), std::string::npos)
      << error_of(j);
  j = {{"model_type", "qwen2_vl"}, {"vision_config", {{"embed_dim", 1000}, {"num_heads", 16}}}};  // head_dim 62
  EXPECT_NE(error_of(j).find("head_dim=62 must be a positive multiple of 4"), std::string::npos) << error_of(j);
  j = {{"model_type", "llava"}, {"vision_config", {{"model_type", "pixtral"}, {"patch_size", "16"}}}};
  EXPECT_NE(error_of(j).find("vision_config.patch_size=\"16\" must be an integer"), std::string::npos) << error_of(j);
  j = {{"model_type", "llava"}, {"vision_config", {{"model_type", "pixtral"}, {"rope_theta", 1.0}}}};
  EXPECT_NE(error_of(j).find("base=1 must be > 1"), std::string::npos) << error_of(j);
  const posenc::vision_positional_plan v = posenc::vision_plan_from_hf_file(model_file("pixtral_12b.json"));
  EXPECT_NE(v.check_layer(24).message().find("layer 24 is not in [0, 24)"), std::string::npos);
  posenc::vision_positional_plan none;
  EXPECT_EQ(posenc::try_vision_plan_from_hf_file(model_file("no_such.json"), none).code(), posenc::errc::io_error);
}

TEST(VisionPlan, RejectedArgumentsWriteNothing) {
  posenc::mrope_plan p;
  EXPECT_NE(posenc::try_make_vision_rope_plan(66, 10000.0, posenc::vision_rope_layout::split,
                                              posenc::rope_style::half_split, p)
                .message()
                .find("head_dim=66 must be a positive multiple of 4"),
            std::string::npos);
  EXPECT_FALSE(posenc::try_make_vision_rope_plan(64, 0.5, posenc::vision_rope_layout::alternating,
                                                 posenc::rope_style::half_split, p)
                   .ok());
  EXPECT_EQ(p.plan().pairs(), 0) << "a rejected plan was written";
  std::vector<std::int64_t> ids{42};
  EXPECT_NE(posenc::try_vision_positions(1, 5, 4, 2, ids).message().find("grid 5x4 is not divisible by merge=2"),
            std::string::npos);
  EXPECT_FALSE(posenc::try_vision_positions(0, 4, 4, 1, ids).ok());
  EXPECT_FALSE(posenc::try_vision_positions(1, index_t{1} << 30, index_t{1} << 30, 1, ids).ok());
  EXPECT_EQ(ids, std::vector<std::int64_t>{42}) << "rejected positions were written";
}

}  // namespace
