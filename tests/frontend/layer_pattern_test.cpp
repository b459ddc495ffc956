#include "projector/frontend/layer_pattern.h"

#include <gtest/gtest.h>

#include <numeric>

namespace projector {
namespace {

TEST(ListExpression, DeepSeekPatterns) {
  std::string err;
  auto v = eval_list_expression("([0]*3+[1]*58)", err);
  ASSERT_TRUE(v) << err;
  ASSERT_TRUE(v->is_list);
  ASSERT_EQ(v->list.size(), 61u);
  EXPECT_EQ(v->list[2], 0);
  EXPECT_EQ(v->list[3], 1);
  EXPECT_EQ(std::accumulate(v->list.begin(), v->list.end(), 0LL), 58);
  v = eval_list_expression("[0]*1+[1]*26", err);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->list.size(), 27u);
  v = eval_list_expression("2*[1, 0] + [1,]", err);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->list, (std::vector<long long>{1, 0, 1, 0, 1}));
  v = eval_list_expression(" 3 ", err);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->is_list);
  EXPECT_EQ(v->integer, 3);
}

TEST(ListExpression, RejectsAnythingElse) {
  std::string err;
  EXPECT_FALSE(eval_list_expression("__import__('os')", err));
  EXPECT_FALSE(eval_list_expression("[0]*", err));
  EXPECT_FALSE(eval_list_expression("[0]*3+", err));
  EXPECT_FALSE(eval_list_expression("[0]*[1]", err));
  EXPECT_FALSE(eval_list_expression("([0]*3", err));
  EXPECT_FALSE(eval_list_expression("[1]*99999999", err));
}

TEST(MoePattern, IntAndList) {
  std::string err;
  auto p = moe_pattern_from_int(1, 4, err);
  EXPECT_EQ(*p, (std::vector<int>{1, 1, 1, 1}));
  p = moe_pattern_from_int(2, 5, err);
  EXPECT_EQ(*p, (std::vector<int>{1, 0, 1, 0, 1}));  // Megatron: layer i is MoE iff i % f == 0
  p = moe_pattern_from_list({0, 1, 1, 1}, 3, err);   // longer lists are truncated
  EXPECT_EQ(*p, (std::vector<int>{0, 1, 1}));
  EXPECT_FALSE(moe_pattern_from_list({0, 1}, 3, err));  // shorter: error
  EXPECT_FALSE(moe_pattern_from_int(0, 3, err));
}

TEST(PipelineLayout, RepeatGroupsAndMarkers) {
  std::string err;
  // DeepSeek-V3: 3 + 29 x 2 = 61 layers on 32 stages; MTP and loss on the last two.
  auto s = parse_pipeline_layout("Et*3|(tt|)*29m|L", err);
  ASSERT_TRUE(s) << err;
  ASSERT_EQ(s->size(), 32u);
  EXPECT_TRUE((*s)[0].embedding);
  EXPECT_EQ((*s)[0].decoder_layers, 3);
  EXPECT_EQ((*s)[1].decoder_layers, 2);
  EXPECT_EQ((*s)[29].decoder_layers, 2);
  EXPECT_EQ((*s)[30].decoder_layers, 0);
  EXPECT_EQ((*s)[30].mtp_layers, 1);
  EXPECT_TRUE((*s)[31].loss);
  int total = 0;
  for (const auto& st : *s) total += st.decoder_layers;
  EXPECT_EQ(total, 61);
}

TEST(PipelineLayout, CommasQuotesAndNestedCounts) {
  std::string err;
  // The DeepSeek-V4 anchor layout (spec 12.3): 4 + 5 + 5 x 6 + 4 = 43 layers on 8 stages.
  auto s = parse_pipeline_layout("'Et*4|t*5|(t*6|)*5,t*4mL'", err);
  ASSERT_TRUE(s) << err;
  ASSERT_EQ(s->size(), 8u);
  int total = 0;
  for (const auto& st : *s) total += st.decoder_layers;
  EXPECT_EQ(total, 43);
  EXPECT_TRUE(s->back().loss);
  EXPECT_EQ(s->back().mtp_layers, 1);
  EXPECT_FALSE(parse_pipeline_layout("Et*3|x", err));
  EXPECT_FALSE(parse_pipeline_layout("(tt|*2", err));
  EXPECT_FALSE(parse_pipeline_layout("t*", err));
}

}  // namespace
}  // namespace projector
