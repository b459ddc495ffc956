// Small parsers for per-layer patterns written as strings in Megatron configs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/model/job.h"

namespace projector {

// A tiny, safe evaluator for Python-like list expressions as they appear in `moe_layer_freq`:
// integers, list literals `[0, 1, 1]`, repetition `[x]*n` / `n*[x]`, concatenation `+` and
// parentheses, e.g. "([0]*3+[1]*58)" or "[0]*1+[1]*26". A bare integer evaluates to itself.
// Returns nullopt and sets `error` on anything else (no general eval).
struct PyValue {
  bool is_list = false;
  long long integer = 0;
  std::vector<long long> list;
};
std::optional<PyValue> eval_list_expression(const std::string& text, std::string& error);

// The MoE pattern (1 = MoE layer) for `num_layers` layers from a moe_layer_freq value that has
// been evaluated: an int f -> layer i is MoE iff i % f == 0 (1: all MoE); a list is used as is
// (longer lists are truncated, shorter ones are an error reported through `error`).
std::optional<std::vector<int>> moe_pattern_from_int(long long freq, int num_layers,
                                                     std::string& error);
std::optional<std::vector<int>> moe_pattern_from_list(const std::vector<long long>& list,
                                                      int num_layers, std::string& error);

// Why `num_experts` experts in `groups` equal groups, each token's top-`topk` taken from its best
// `picked` groups, cannot route (group-limited routing: Megatron, torchtitan, MaxText); nullopt
// when they can. The groups must divide the experts into groups of at least `min_group_size`
// (torchtitan and MaxText score a group by its top-2 experts), and at most all groups can be
// picked, holding at least top-k experts. `in_groups_key`: the problem is the group count's.
struct GroupRoutingProblem {
  bool in_groups_key = false;
  std::string message;
};
std::optional<GroupRoutingProblem> group_routing_problem(int num_experts, int topk, int groups,
                                                         int picked, int min_group_size);

// One pipeline stage of a Megatron `pipeline_model_parallel_layout`.
struct LayoutStage {
  int decoder_layers = 0;
  bool embedding = false;  // E
  bool loss = false;       // L (final norm, output layer, loss)
  int mtp_layers = 0;      // m
};

// Parses a layout such as "Et*3|(tt|)*29m|L": stages are separated by '|'; inside a stage 'E' is
// the embedding, 't' a decoder layer, 'm' an MTP layer, 'L' the loss; "x*N" repeats the preceding
// symbol and "(...)*N" repeats a group (groups may contain '|'). Commas and spaces are ignored;
// one level of surrounding quotes is stripped. Returns nullopt and sets `error` on bad syntax.
std::optional<std::vector<LayoutStage>> parse_pipeline_layout(const std::string& text,
                                                              std::string& error);

// One layer of a Megatron hybrid stack from its pattern symbol (MG12 hybrid_layer_allocation.py):
// 'M' the mixer (`mixer`'s kind with its Mamba-2 or linear-attention spec), '*' / '+' attention
// only, 'E' the MoE block only, '-' a dense MLP only. The caller has checked the symbol set and,
// for 'E', that `moe` has experts.
void set_hybrid_layer(char symbol, const LayerSpec& mixer, const MoeSpec& moe, LayerSpec& layer);

}  // namespace projector
