// The free-text readers of published runs (src/validate/phrases.h), one table per field: each row
// is a phrasing seen in published runs (data/validation or held-out sets) and the reading a careful
// person gives it. Negations must not flip a reading ("does not reshard" keeps FSDP on, "no flex
// backend" is not flex), and "recomputed" / "rematerialized" means recomputed, never saved.
#include "validate/phrases.h"

#include <gtest/gtest.h>

#include <optional>

namespace projector::validate_detail {
namespace {

TEST(Phrases, WordsSplitSlashGroupsAndContractions) {
  EXPECT_EQ(phrase_words("q/k/v_proj rematerialized"),
            (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "rematerialized"}));
  EXPECT_EQ(phrase_words("FSDP doesn't reshard"),
            (std::vector<std::string>{"fsdp", "does", "not", "reshard"}));
  EXPECT_EQ(phrase_words("alltoall (no flex)"),
            (std::vector<std::string>{"alltoall", "|", "no", "flex", "|"}));
}

TEST(Phrases, NegationGovernsOnlyItsClause) {
  const auto w = phrase_words("alltoall (no flex backend), flex-free");
  EXPECT_TRUE(mentions(w, "flex"));
  EXPECT_FALSE(affirms(w, "flex backend"));
  EXPECT_TRUE(affirms(w, "alltoall"));
  // A negation before a clause boundary does not reach the next clause.
  EXPECT_TRUE(affirms(phrase_words("no overlap; flex"), "flex"));
  EXPECT_FALSE(affirms(phrase_words("FSDP off"), "fsdp"));
}

struct FsdpRow {
  const char* text;
  std::optional<FsdpKind> kind;
  std::optional<int> shard_group;
  std::optional<bool> reshard;
  bool distributed_optimizer = false;
  bool grads_sharded = false;
};

TEST(Phrases, FsdpTable) {
  const FsdpRow rows[] = {
      // Megatron's custom FSDP (optim_grads_params, its default), sharding over 8 ranks.
      {"Megatron-FSDP, sharding group 8", FsdpKind::kZero3, 8, std::nullopt},
      // "not" governs resharding, not FSDP.
      {"FSDP (torchtitan default), does not reshard after forward", FsdpKind::kFsdp2, std::nullopt,
       false},
      {"FSDP2, doesn't reshard", FsdpKind::kFsdp2, std::nullopt, false},
      {"no reshard after forward, FSDP2", FsdpKind::kFsdp2, std::nullopt, false},
      {"fsdp reshard_after_forward=false", FsdpKind::kFsdp2, std::nullopt, false},
      {"FSDP2, reshards after forward", FsdpKind::kFsdp2, std::nullopt, true},
      {"HSDP, 4-way shard", FsdpKind::kFsdp2, 4, std::nullopt},
      {"fully_shard, dp_shard 16", FsdpKind::kFsdp2, 16, std::nullopt},
      {"yes (torch FSDP2 via Primus)", FsdpKind::kFsdp2, std::nullopt, std::nullopt},
      // data/validation's negative answers.
      {"no (DDP + distributed optimizer)", FsdpKind::kNone, std::nullopt, std::nullopt},
      {"no (FSDP column 0: DDP + distributed optimizer)", FsdpKind::kNone, std::nullopt,
       std::nullopt},
      {"no", FsdpKind::kNone, std::nullopt, std::nullopt},
      {"DDP, no FSDP", FsdpKind::kNone, std::nullopt, std::nullopt},
      {"1", FsdpKind::kNone, std::nullopt, std::nullopt},
      // Megatron-FSDP sharding only the optimizer state (and gradients): the distributed optimizer.
      {"Megatron-FSDP optim_grads", FsdpKind::kNone, std::nullopt, std::nullopt, true, true},
      {"Megatron-FSDP, data_parallel_sharding_strategy optim", FsdpKind::kNone, std::nullopt,
       std::nullopt, true, false},
      // A bare number is the caller's (the shard degree); nothing read here.
      {"64", std::nullopt, std::nullopt, std::nullopt},
      {"", std::nullopt, std::nullopt, std::nullopt},
  };
  for (const FsdpRow& row : rows) {
    SCOPED_TRACE(row.text);
    const FsdpReading r = read_fsdp_text(row.text);
    EXPECT_EQ(r.kind, row.kind);
    EXPECT_EQ(r.shard_group, row.shard_group);
    EXPECT_EQ(r.reshard_after_forward, row.reshard);
    EXPECT_EQ(r.distributed_optimizer, row.distributed_optimizer);
    EXPECT_EQ(r.grads_sharded, row.grads_sharded);
  }
}

struct RecomputeRow {
  const char* text;
  RecomputeGranularity granularity;
  std::vector<RecomputeModule> modules;
  bool recognised = true;
};

TEST(Phrases, RecomputeTable) {
  using G = RecomputeGranularity;
  using M = RecomputeModule;
  const RecomputeRow rows[] = {
      // Named parts recomputed: selective, with the Megatron modules they are.
      {"RMSNorm + MLA up-projection recomputed", G::kSelective, {M::kMlaUpProj, M::kLayernorm}},
      // Rematerialized tensors are recomputed, not kept; no Megatron module names them.
      {"q/k/v_proj rematerialized", G::kSelective, {}},
      {"core attention recomputed", G::kSelective, {M::kCoreAttn}},
      {"selective (layernorm, moe_act) (recipe; see assumed)",
       G::kSelective,
       {M::kMoeAct, M::kLayernorm}},
      {"selective (attention core: QK^T, softmax, dropout, attn-over-V) - 'present work'",
       G::kSelective,
       {M::kCoreAttn}},
      {"selective (present work) -> 54.2% MFU; full recompute -> 42.1% MFU", G::kSelective, {}},
      {"selective: moe activation and shared experts",
       G::kSelective,
       {M::kMoeAct, M::kSharedExperts}},
      {"full (method block, recompute_num_layers 5: first 5 of 48 layers recomputed)",
       G::kFull,
       {}},
      {"full activation checkpointing (use_checkpoint: true)", G::kFull, {}},
      {"full (--checkpoint-activations)", G::kFull, {}},
      {"activation recomputation", G::kFull, {}},
      {"none", G::kNone, {}},
      {"no activation checkpointing", G::kNone, {}},
      {"activations not recomputed", G::kNone, {}},
      {"whatever the recipe does", G::kNone, {}, false},
  };
  for (const RecomputeRow& row : rows) {
    SCOPED_TRACE(row.text);
    const RecomputeReading r = read_recompute_text(row.text);
    EXPECT_EQ(r.granularity, row.granularity);
    EXPECT_EQ(r.modules, row.modules);
    EXPECT_EQ(r.recognised, row.recognised);
  }
}

TEST(Phrases, MaxTextPlacementTable) {
  const std::string remat =
      "remat_policy=custom; decoder_layer_input offloaded, q/k/v_proj "
      "rematerialized";
  EXPECT_EQ(stated_placement(remat, "decoder_layer_input"), "offload");
  EXPECT_EQ(stated_placement(remat, "query_proj"), "remat");
  EXPECT_EQ(stated_placement(remat, "value_proj"), "remat");
  EXPECT_EQ(stated_placement(remat, "out_proj"), std::nullopt);
  // data/validation: one verb for the whole list.
  const std::string listed =
      "remat_policy=custom; decoder_layer_input, out_proj, query/key/value_proj offloaded";
  EXPECT_EQ(stated_placement(listed, "decoder_layer_input"), "offload");
  EXPECT_EQ(stated_placement(listed, "out_proj"), "offload");
  EXPECT_EQ(stated_placement(listed, "key_proj"), "offload");
  EXPECT_EQ(stated_placement(listed, "mlpwo"), std::nullopt);
  const std::string mixed = "remat_policy=custom, out_proj saved on device, mlpwo offloaded";
  EXPECT_EQ(stated_placement(mixed, "out_proj"), "device");
  EXPECT_EQ(stated_placement(mixed, "mlpwo"), "offload");
  EXPECT_EQ(stated_placement("remat_policy=custom; context not offloaded", "context"), "device");
}

TEST(Phrases, FusedAttentionTable) {
  const std::pair<const char*, std::optional<bool>> rows[] = {
      {"TE fused attention (CK backend)", true},
      {"FlashAttention-3", true},
      {"cuDNN SDPA", true},
      {"splash attention (Pallas)", true},
      {"flash_attn v2", true},
      {"unfused (eager)", false},
      {"no flash attention", false},
      {"none", false},
      {"standard", std::nullopt},
  };
  for (const auto& [text, reading] : rows) {
    EXPECT_EQ(read_fused_attention(text), reading) << text;
  }
}

TEST(Phrases, DispatcherTable) {
  const std::pair<const char*, const char*> rows[] = {
      {"alltoall (no flex backend in the GB200 BF16 V2 config)", "alltoall"},
      {"flex (HybridEP backend), no all-to-all overlap (recipe; see assumed)", "flex"},
      {"DeepEP (flex), TE grouped experts", "flex"},
      {"flex, DeepEP backend", "flex"},
      {"allgather", "allgather"},
      {"all-to-all", "alltoall"},
      {"grouped GEMM", ""},
  };
  for (const auto& [text, kind] : rows) EXPECT_EQ(read_dispatcher_kind(text), kind) << text;
}

TEST(Phrases, AsyncTpTable) {
  EXPECT_TRUE(states_async_tp("torch.compile, async TP, Float8"));
  EXPECT_TRUE(states_async_tp("--tp-comm-overlap"));
  EXPECT_TRUE(states_async_tp("enable_async_tensor_parallel"));
  EXPECT_FALSE(states_async_tp("vanilla TP (no async TP)"));
  EXPECT_FALSE(states_async_tp("FSDP2, torch.compile"));
}

}  // namespace
}  // namespace projector::validate_detail
