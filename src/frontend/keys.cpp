// Known Megatron / Primus argument names: the ones the projection reads, and the ones it
// deliberately ignores (logging, data, checkpointing, kernels...), so neither warns as a typo.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "projector/frontend/loader.h"

namespace projector {
namespace {

const std::set<std::string>& known_keys() {
  static const std::set<std::string> keys = {
      // model shape
      "num_layers",
      "hidden_size",
      "ffn_hidden_size",
      "num_attention_heads",
      "group_query_attention",
      "num_query_groups",
      "kv_channels",
      "multi_latent_attention",
      "q_lora_rank",
      "kv_lora_rank",
      "qk_head_dim",
      "qk_pos_emb_head_dim",
      "v_head_dim",
      "qk_layernorm",
      "normalization",
      "swiglu",
      "squared_relu",
      "gated_linear_unit",
      "add_bias_linear",
      "add_qkv_bias",
      "position_embedding_type",
      "max_position_embeddings",
      "untie_embeddings_and_output_weights",
      "share_embeddings_and_output_weights",
      "vocab_size",
      "padded_vocab_size",
      "make_vocab_size_divisible_by",
      "tokenizer_type",
      "tokenizer_model",
      "num_experts",
      "moe_router_topk",
      "moe_ffn_hidden_size",
      "moe_shared_expert_intermediate_size",
      "moe_layer_freq",
      "moe_expert_capacity_factor",
      "moe_router_enable_expert_bias",
      "moe_grouped_gemm",
      "mtp_num_layers",
      "window_size",
      "window_attn_skip_freq",
      "attention_dropout",
      "hidden_dropout",
      // parallelism
      "tensor_model_parallel_size",
      "pipeline_model_parallel_size",
      "context_parallel_size",
      "expert_model_parallel_size",
      "expert_tensor_parallel_size",
      "sequence_parallel",
      "num_layers_per_virtual_pipeline_stage",
      "virtual_pipeline_model_parallel_size",
      "num_virtual_stages_per_pipeline_rank",
      "pipeline_model_parallel_layout",
      "decoder_first_pipeline_num_layers",
      "decoder_last_pipeline_num_layers",
      "use_distributed_optimizer",
      "use_torch_fsdp2",
      "use_megatron_fsdp",
      "use_custom_fsdp",
      "data_parallel_sharding_strategy",
      "overlap_grad_reduce",
      "overlap_param_gather",
      "tp_comm_overlap",
      "cp_comm_type",
      "ddp_bucket_size",
      "data_parallel_size",
      // runtime
      "micro_batch_size",
      "global_batch_size",
      "seq_length",
      "bf16",
      "fp16",
      "fp8",
      "fp8_recipe",
      "fp8_param_gather",
      "recompute_granularity",
      "recompute_method",
      "recompute_num_layers",
      "recompute_modules",
      "recompute_layer_ids",
      "use_flash_attn",
      "cross_entropy_loss_fusion",
      "use_turbo_deepep",
      "turbo_sync_free_moe_stage",
      "optimizer",
      "use_precision_aware_optimizer",
      "main_grads_dtype",
      "exp_avg_dtype",
      "exp_avg_sq_dtype",
      "enable_zero_bubble",
      "pipeline_schedule_algorithm",
      "allow_tp_beyond_node",
      // experiment structure
      "framework",
      "config",
      "model",
      "overrides",
      "extends",
      "bases",
      "includes",
      "source",
      // read by Primus but not by the projection: accepted silently
      "work_group",
      "user_name",
      "exp_name",
      "workspace",
      "platform",
      "modules",
      "name",
      "train_iters",
      "train_samples",
      "eval_iters",
      "eval_interval",
      "save",
      "load",
      "save_interval",
      "log_interval",
      "log_throughput",
      "log_timers_to_tensorboard",
      "tensorboard_dir",
      "wandb_project",
      "wandb_exp_name",
      "wandb_save_dir",
      "disable_wandb",
      "disable_tensorboard",
      "data_path",
      "train_data_path",
      "valid_data_path",
      "test_data_path",
      "mock_data",
      "split",
      "data_cache_path",
      "num_workers",
      "dataloader_type",
      "lr",
      "min_lr",
      "lr_decay_style",
      "lr_decay_iters",
      "lr_warmup_iters",
      "lr_warmup_fraction",
      "lr_warmup_init",
      "weight_decay",
      "adam_beta1",
      "adam_beta2",
      "adam_eps",
      "sgd_momentum",
      "clip_grad",
      "init_method_std",
      "seed",
      "norm_epsilon",
      "rotary_base",
      "rotary_percent",
      "rotary_scaling_factor",
      "rotary_seq_len_interpolation_factor",
      "use_rope_scaling",
      "rope_scaling_factor",
      "mscale",
      "mscale_all_dim",
      "apply_rope_fusion",
      "attention_softmax_in_fp32",
      "apply_residual_connection_post_layernorm",
      "masked_softmax_fusion",
      "bias_dropout_fusion",
      "bias_swiglu_fusion",
      "gradient_accumulation_fusion",
      "persist_layer_norm",
      "apply_layernorm_1p",
      "moe_router_score_function",
      "moe_router_pre_softmax",
      "moe_router_num_groups",
      "moe_router_group_topk",
      "moe_router_topk_scaling_factor",
      "moe_router_bias_update_rate",
      "moe_router_load_balancing_type",
      "moe_token_dispatcher_type",
      "moe_aux_loss_coeff",
      "moe_z_loss_coeff",
      "moe_router_dtype",
      "moe_use_legacy_grouped_gemm",
      "moe_permute_fusion",
      "moe_shared_expert_overlap",
      "moe_pad_expert_input_to_capacity",
      "moe_token_drop_policy",
      "moe_input_jitter_eps",
      "moe_router_fusion",
      "moe_use_upcycling",
      "mtp_loss_scaling_factor",
      "enable_primus_turbo",
      "use_turbo_grouped_gemm",
      "use_turbo_grouped_mlp",
      "use_turbo_attention",
      "use_turbo_parallel_linear",
      "use_turbo_fused_act_with_probs",
      "patch_zero_bubble",
      "zero_bubble_v_schedule",
      "pp_algorithm",
      "profile",
      "profile_step_start",
      "profile_step_end",
      "use_pytorch_profiler",
      "disable_profiler_activity_cpu",
      "torch_profiler_use_gzip",
      "manual_gc",
      "manual_gc_interval",
      "no_save_optim",
      "no_save_rng",
      "no_load_optim",
      "no_load_rng",
      "ckpt_format",
      "finetune",
      "auto_continue_train",
      "exit_on_missing_checkpoint",
      "async_save",
      "async_tensor_model_parallel_allreduce",
      "defer_embedding_wgrad_compute",
      "accumulate_allreduce_grads_in_fp32",
      "grad_reduce_in_bf16",
      "loss_scale",
      "initial_loss_scale",
      "min_loss_scale",
      "loss_scale_window",
      "hysteresis",
      "attention_backend",
      "transformer_impl",
      "use_legacy_models",
      "use_mcore_models",
      "spec",
      "deterministic_mode",
      "distributed_backend",
      "distributed_timeout_minutes",
      "num_distributed_optimizer_instances",
      "use_cpu_initialization",
      "empty_unused_memory_level",
      "check_for_nan_in_loss_and_grad",
      "check_for_spiky_loss",
      "no_masked_softmax_fusion",
      "no_bias_dropout_fusion",
      "no_gradient_accumulation_fusion",
      "no_persist_layer_norm",
      "eod_mask_loss",
      "reset_position_ids",
      "reset_attention_mask",
      "fp8_margin",
      "fp8_interval",
      "fp8_amax_history_len",
      "fp8_amax_compute_algo",
      "fp8_wgrad",
      "first_last_layers_bf16",
      "num_layers_at_start_in_bf16",
      "num_layers_at_end_in_bf16",
      "tp_comm_overlap_cfg",
      "tp_comm_bulk_wgrad",
      "tp_comm_bulk_dgrad",
      "tp_comm_overlap_ag",
      "tp_comm_overlap_rs",
      "align_grad_reduce",
      "align_param_gather",
      "calculate_per_token_loss",
      "num_dataset_builder_threads",
      "stderr_sink_level",
      "wandb_entity",
      "log_avg_skip_iterations",
      "log_avg_reset_interval",
      "use_rocm_mem_info",
      "use_rocm_mem_info_iters",
      "log_params_norm",
      "log_num_zeros_in_grad",
      "timing_log_level",
      "timing_log_option",
      "legacy_tokenizer",
      "multi_latent_attention_fusion",
      "rope_type",
      "beta_fast",
      "beta_slow",
      "original_max_position_embeddings",
      "qk_clip",
      "decoder_num_layers",
      "encoder_num_layers",
      "model_type",
      "is_hybrid_model",
      "use_te_activation_func",
      "activation_func_fp8_input_store",
      "overlap_moe_expert_parallel_comm",
      "moe_deepep_num_sms",
      "moe_enable_deepep",
      "moe_flex_dispatcher_backend",
      "use_sharp",
      "nccl_communicator_config_path",
      "sequence_length",
      "context_model_parallel_size",
      "adam_beta",
      "world_size",
      "rank",
  };
  return keys;
}

}  // namespace

bool is_known_key(const std::string& key) {
  return known_keys().count(key) > 0;
}

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_known_key(const std::string& key) {
  std::string best;
  int best_d = 1 << 30;
  for (const std::string& k : known_keys()) {
    const int d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  // Only suggest when the key is plausibly a misspelling (at most a third of it differs).
  if (best_d > std::max<int>(2, static_cast<int>(key.size()) / 3)) return "";
  return best;
}

std::optional<std::int64_t> tokenizer_vocab_size(const std::string& tokenizer_type,
                                                 const std::string& tokenizer_model) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string model = lower(tokenizer_model);
  // Embedding rows of the published checkpoints (HF config.json `vocab_size`).
  struct Entry {
    const char* needle;
    std::int64_t vocab;
  };
  static const Entry kByModel[] = {
      {"llama-3", 128256},    {"llama3", 128256},       {"llama-2", 32000},
      {"llama2", 32000},      {"mixtral-8x22b", 32768}, {"mixtral", 32000},
      {"mistral-7b", 32000},  {"deepseek-v3", 129280},  {"deepseek-v2", 102400},
      {"qwen3", 151936},      {"qwen2.5-0.5b", 151936}, {"qwen2.5-1.5b", 151936},
      {"qwen2.5-3b", 151936}, {"qwen2.5", 152064},      {"gpt-oss", 201088},
      {"grok-1", 131072},     {"gpt2", 50257},
  };
  if (!model.empty()) {
    for (const Entry& e : kByModel) {
      if (model.find(e.needle) != std::string::npos) return e.vocab;
    }
  }
  static const Entry kByType[] = {
      {"llama3tokenizer", 128256},     {"llama2tokenizer", 32000},      {"gpt2bpetokenizer", 50257},
      {"deepseekv3tokenizer", 129280}, {"deepseekv2tokenizer", 102400}, {"mixtraltokenizer", 32000},
  };
  const std::string type = lower(tokenizer_type);
  for (const Entry& e : kByType) {
    if (type == e.needle) return e.vocab;
  }
  return std::nullopt;
}

}  // namespace projector
