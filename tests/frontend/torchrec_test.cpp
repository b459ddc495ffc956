// The TorchRec DLRM back-end adapter: the bundled fixtures (tests/data/torchrec/README.md) load
// into the model dlrm_main.py / Primus would build, the dlrm_main.py command line is read like
// argparse reads it, normalization is idempotent, `--set` pins a table's sharding, and bad input
// is a one-line error naming the key (and its line).
#include <gtest/gtest.h>

#include "frontend/torchrec/adapter.h"
#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"
#include "projector/util/error.h"
#include "support/config_text.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kFixtures = std::string(PROJECTOR_TEST_DATA_DIR) + "/torchrec/";
const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;

LoadRequest request(const std::string& path, const std::string& hardware = "a100_40gb") {
  return testing::bundled_request(path, hardware);
}

// The README's Criteo 1TB tables: 204,184,588 rows of dim 128 (104.54 GB in fp32, its
// "Collective Size of Embedding Tables").
TEST(TorchrecFixtures, ReadmeConfigs) {
  for (const char* name : {"readme_dot_sgd_lbs256", "readme_dot_adagrad_lbs2048",
                           "readme_dcnv2_adagrad_lbs2048", "readme_dcnv2_adagrad_lbs16384"}) {
    SCOPED_TRACE(name);
    const JobSpec job = load_job(request(kFixtures + name + ".yaml"));
    const RecommendationSpec& m = job.model.recommendation;
    EXPECT_EQ(job.model.family, ModelFamily::kRecommendation);
    ASSERT_EQ(m.tables.size(), 26u);
    EXPECT_EQ(recsys_params(m).embedding, 204184588LL * 128);
    EXPECT_EQ(m.tables[0].name, "t_cat_0");
    EXPECT_EQ(m.tables[5].num_embeddings, 3);
    EXPECT_EQ(m.dense_features, 13);
    EXPECT_EQ(m.bottom_mlp.layer_sizes, (std::vector<std::int64_t>{512, 256, 128}));
    EXPECT_EQ(m.top_mlp.layer_sizes, (std::vector<std::int64_t>{1024, 1024, 512, 256, 1}));
    EXPECT_EQ(job.runtime.global_batch_size, job.runtime.micro_batch_size * 8);
    EXPECT_EQ(job.runtime.seq_length, 1);
    EXPECT_EQ(job.runtime.recsys.dense_dtype, Dtype::kFp32);  // TF32 off by default
    EXPECT_EQ(job.parallel.embedding_plan.tables.size(), 26u);
  }
  const JobSpec sgd = load_job(request(kFixtures + "readme_dot_sgd_lbs256.yaml"));
  EXPECT_EQ(sgd.runtime.micro_batch_size, 256);
  EXPECT_EQ(sgd.runtime.recsys.embedding_optimizer, RecsysOptimizer::kSgd);
  EXPECT_EQ(sgd.model.recommendation.interaction, FeatureInteraction::kDot);
  const JobSpec dcn = load_job(request(kFixtures + "readme_dcnv2_adagrad_lbs16384.yaml"));
  EXPECT_EQ(dcn.runtime.recsys.embedding_optimizer, RecsysOptimizer::kAdagrad);
  EXPECT_EQ(dcn.runtime.recsys.dense_optimizer, RecsysOptimizer::kAdagrad);
  EXPECT_EQ(dcn.model.recommendation.interaction, FeatureInteraction::kDcn);
  EXPECT_EQ(dcn.model.recommendation.dcn_num_layers, 3);      // dlrm_main.py default
  EXPECT_EQ(dcn.model.recommendation.dcn_low_rank_dim, 512);  // dlrm_main.py default
}

// MLPerf DLRM-DCNv2 as a torchx command line: launcher words skipped, flags after "--" read.
TEST(TorchrecFixtures, MlperfCommandLine) {
  const JobSpec job = load_job(request(kFixtures + "mlperf_dlrm_dcnv2.yaml"));
  const RecommendationSpec& m = job.model.recommendation;
  EXPECT_EQ(job.runtime.micro_batch_size, 8192);
  EXPECT_EQ(job.runtime.global_batch_size, 65536);
  EXPECT_EQ(m.interaction, FeatureInteraction::kDcn);
  ASSERT_EQ(m.tables.size(), 26u);
  double lookups = 0.0;
  for (const EmbeddingTableSpec& t : m.tables) lookups += t.pooling_factor;
  EXPECT_DOUBLE_EQ(lookups, 214.0);  // the README's multi-hot sizes sum to 214
  EXPECT_EQ(job.runtime.recsys.embedding_optimizer, RecsysOptimizer::kAdagrad);
  EXPECT_TRUE(job.warnings.empty()) << job.warnings.front();
}

// The smallest unit-test configuration: 26 tables of 8 rows, dim 8, dlrm_main.py's default batch.
TEST(TorchrecFixtures, UnitTestConfig) {
  const JobSpec job = load_job(request(kFixtures + "unit_test_random.yaml"));
  const RecommendationSpec& m = job.model.recommendation;
  ASSERT_EQ(m.tables.size(), 26u);
  EXPECT_EQ(m.tables[0].num_embeddings, 8);
  EXPECT_EQ(m.embedding_dim(), 8);
  EXPECT_EQ(m.top_mlp.layer_sizes, (std::vector<std::int64_t>{8, 1}));
  EXPECT_EQ(job.runtime.micro_batch_size, 32);
  EXPECT_EQ(job.runtime.recsys.embedding_optimizer, RecsysOptimizer::kSgd);
}

// Primus' DLRM-v4 example: 11 tables of 560 GiB in total, 5 HSTU blocks, 40 % fill.
TEST(TorchrecFixtures, PrimusHstuDefaults) {
  const JobSpec job = load_job(request(kFixtures + "primus_dlrm_v4_hstu.yaml", "mi300x"));
  const RecommendationSpec& m = job.model.recommendation;
  ASSERT_EQ(m.tables.size(), 11u);
  EXPECT_EQ(m.embedding_dim(), 512);
  EXPECT_DOUBLE_EQ(m.tables[3].pooling_factor, 20.0);
  EXPECT_EQ(m.hstu.num_layers, 5);
  EXPECT_EQ(m.hstu.effective_seq_len(), 1638);  // round(4096 x 0.4)
  // PRD golden: HSTU layer parameters 1,310,720 = 512 x 4 x 512 + 4 x 128 x 512.
  EXPECT_EQ(recsys_params(m).hstu, 5 * 1310720);
  EXPECT_NEAR(static_cast<double>(recsys_params(m).embedding) * 4 / (1024.0 * 1024 * 1024), 560.0,
              0.01);
  EXPECT_EQ(job.runtime.recsys.embedding_optimizer, RecsysOptimizer::kRowWiseAdagrad);
  EXPECT_EQ(job.runtime.recsys.dense_dtype, Dtype::kBf16);
  for (const TablePlan& tp : job.parallel.embedding_plan.tables) {
    EXPECT_EQ(tp.sharding, EmbeddingSharding::kRowWise);  // embedding_sharding: row
  }
}

TEST(TorchrecAdapter, CommandLineLikeArgparse) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(frontend_detail::split_dlrm_command_line(
                "python dlrm_main.py --batch_size 8 --adagrad --interaction_type=dcn "
                "--num_embeddings_per_feature \"3,4\""),
            (Pairs{{"batch_size", "8"},
                   {"adagrad", "true"},
                   {"interaction_type", "dcn"},
                   {"num_embeddings_per_feature", "3,4"}}));
  EXPECT_EQ(frontend_detail::split_dlrm_command_line(
                "torchx run -s local_cwd dist.ddp -j 1x8 --script dlrm_main.py -- --epochs 1"),
            (Pairs{{"epochs", "1"}}));
  // shlex.split refuses an unclosed quote (issue 30): so does the reader.
  EXPECT_THROW(frontend_detail::split_dlrm_command_line("python dlrm_main.py --x \"3,4 --y 1"),
               InputError);
}

TEST(TorchrecAdapter, NormalizationIsIdempotent) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("a.yaml",
                "framework: dlrm\ncommand_line: '--batch-size 64 --adagrad'\nembedding_dim: 16\n"
                "dense_arch_layer_sizes: 32,16\nnum_embeddings: 100\n");
  const ResolvedConfig rc = resolve_config(request(cfg));
  const frontend_detail::TorchrecAdapter a;
  AdapterInput in;
  in.args = rc.args;
  in.user_keys = rc.user_keys;
  in.profile = *load_framework_profiles(kRepoData).find("torchrec");
  in.data_dir = kRepoData;
  const JobDraft d1 = a.normalize(in);
  const std::string once = in.args.to_text();
  const JobDraft d2 = a.normalize(in);
  EXPECT_EQ(in.args.to_text(), once);
  EXPECT_EQ(d1.micro_batch_size, 64);
  EXPECT_EQ(d2.micro_batch_size, 64);
  EXPECT_EQ(d2.recsys.embedding_optimizer, RecsysOptimizer::kAdagrad);
  EXPECT_EQ(d1.model.recommendation.tables.size(), d2.model.recommendation.tables.size());
}

// `--set` pins one table's sharding (TorchRec's ParameterConstraints sharding_types).
TEST(TorchrecAdapter, SetPinsTableSharding) {
  LoadRequest r = request(kFixtures + "readme_dot_sgd_lbs256.yaml");
  r.set_overrides = {"embedding_sharding.t_cat_0=column_wise", "embedding_sharding.t_cat_5=dp"};
  const JobSpec job = load_job(r);
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  EXPECT_EQ(plan.tables[0].sharding, EmbeddingSharding::kColumnWise);
  EXPECT_TRUE(plan.tables[0].pinned);
  EXPECT_EQ(plan.tables[5].sharding, EmbeddingSharding::kDataParallel);
  EXPECT_EQ(plan.tables[5].shards.size(), 8u);  // a copy on every rank
  EXPECT_FALSE(plan.tables[1].pinned);
}

void expect_error(const std::string& yaml, const std::string& key, int line) {
  testing::TempDir dir;
  const std::string cfg = dir.write("bad.yaml", yaml);
  try {
    load_job(request(cfg));
    FAIL() << "expected an error for " << key;
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    if (line > 0) {
      EXPECT_EQ(e.where().line, line) << e.what();
    }
  }
}

TEST(TorchrecAdapter, BadInputNamesTheKey) {
  const std::string head =
      "framework: torchrec_dlrm\nembedding_dim: 16\n"
      "dense_arch_layer_sizes: 32,16\n";
  expect_error(head + "num_embeddings_per_feature: 10,0,5\n", "num_embeddings_per_feature", 4);
  expect_error(head + "num_embeddings_per_feature: 10,20\nmulti_hot_sizes: 1,2,3\n",
               "multi_hot_sizes", 5);
  expect_error(head + "num_embeddings: 10\nembedding_sharding: diagonal\n", "embedding_sharding",
               5);
  expect_error(head + "num_embeddings: 10\nembedding_sharding: {t_cat_0: sideways}\n",
               "embedding_sharding.t_cat_0", 5);
  expect_error(head + "num_embeddings: -3\n", "num_embeddings", 4);
  expect_error(head + "num_embeddings: 10\ninteraction_type: cross\n", "interaction_type", 5);
  expect_error(
      "framework: torchrec_dlrm\nembedding_dim: 16\nnum_embeddings: 10\n"
      "dense_arch_layer_sizes: 32,8\n",
      "dense_arch_layer_sizes", 4);
  const std::string v4 = "framework: dlrm_v4\nembedding_dim: 64\nnum_embedding_tables: 2\n";
  expect_error(v4 + "embedding_table_rows: [100, 0]\n", "embedding_table_rows", 4);
  expect_error(v4 + "embedding_table_rows: [100, 50]\nembedding_pooling_factor: [1, 2, 3]\n",
               "embedding_pooling_factor", 5);
  expect_error(v4 + "embedding_table_rows: [100, 50]\nembedding_sharding: zigzag\n",
               "embedding_sharding", 5);
}

TEST(TorchrecAdapter, TyposWarnWithTheNearestKey) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("a.yaml",
                "framework: torchrec\nembedding_dim: 16\ndense_arch_layer_sizes: 32,16\n"
                "num_embeddings: 10\ndcn_low_rank_dims: 8\n");
  const JobSpec job = load_job(request(cfg));
  ASSERT_EQ(job.warnings.size(), 1u);
  EXPECT_NE(job.warnings[0].find("did you mean 'dcn_low_rank_dim'"), std::string::npos)
      << job.warnings[0];
}

}  // namespace
}  // namespace projector
