// Top-k routing statistics (moe_routing.h).
#include "projector/cost/moe_routing.h"

#include <algorithm>
#include <numeric>

namespace projector {
namespace {

// Probability that none of a token's `topk` distinct experts (uniform routing over `experts`) is
// among a given `subset` of them: C(experts - subset, topk) / C(experts, topk).
double miss_probability(int experts, int subset, int topk) {
  double p = 1.0;
  for (int i = 0; i < topk; ++i) {
    const double hit_free = static_cast<double>(experts - subset - i);
    if (hit_free <= 0.0) return 0.0;
    p *= hit_free / static_cast<double>(experts - i);
  }
  return p;
}

// Binomial coefficient C(n, k) as a double (0 outside 0 <= k <= n).
double choose(int n, int k) {
  if (k < 0 || k > n) return 0.0;
  double c = 1.0;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

// Consecutive placement (MoePlacement::kConsecutive): the mean number of the `parts` equal
// destinations the experts [k t, k t + k) mod E span, over one period of t (E / gcd(k, E) tokens).
double consecutive_destinations(int experts, int topk, int parts) {
  if (experts <= 0 || parts <= 0 || experts % parts != 0) return 1.0;
  const int per = experts / parts;
  const int period = experts / std::gcd(topk, experts);
  double sum = 0.0;
  for (int t = 0; t < period; ++t) {
    const int first = (topk * t) % experts;
    int spanned = 0;
    int last = -1;
    for (int j = 0; j < std::min(topk, experts); ++j) {
      const int dest = ((first + j) % experts) / per;
      if (dest != last) ++spanned;
      last = dest;
    }
    // An interval that wraps back into the destination it started in counts it once.
    if (spanned > 1 && last == first / per) --spanned;
    sum += spanned;
  }
  return sum / period;
}

}  // namespace

// Probability that a token reaches a given destination holding `experts / parts` experts. Without
// group limits: its `topk` distinct experts are uniform over all experts. Group-limited routing
// (MoeSpec::router_num_groups G, router_group_topk M): the token picks M of the G equal groups and
// its experts are uniform over those M E/G experts; a destination holding g = G/parts whole groups
// is hit when j >= 1 of its groups are picked (hypergeometric) and one expert falls in them, one
// holding part of a group (parts a multiple of G) when its group is picked (M/G) and one expert
// falls in its share.
double destination_hit_probability(const MoeSpec& m, int parts, MoePlacement placement) {
  const int e = m.num_experts;
  if (placement == MoePlacement::kConsecutive) {
    return parts <= 0 ? 1.0 : consecutive_destinations(e, m.topk, parts) / parts;
  }
  const int groups = m.router_num_groups;
  const int picked = m.router_group_topk;
  if (groups <= 0 || picked <= 0 || picked >= groups) {
    return 1.0 - miss_probability(e, e / parts, m.topk);
  }
  const int per_group = e / groups;
  const int pool = picked * per_group;  // experts of the picked groups
  if (parts % groups == 0) {
    return static_cast<double>(picked) / groups * (1.0 - miss_probability(pool, e / parts, m.topk));
  }
  if (groups % parts != 0) return 1.0 - miss_probability(e, e / parts, m.topk);
  const int own = groups / parts;  // whole groups on one destination
  double hit = 0.0;
  for (int j = 1; j <= std::min(own, picked); ++j) {
    // P(j of the destination's groups among the picked): hypergeometric.
    const double pj = choose(own, j) * choose(groups - own, picked - j) / choose(groups, picked);
    hit += pj * (1.0 - miss_probability(pool, j * per_group, m.topk));
  }
  return hit;
}

double dedup_dispatch_factor(const MoeSpec& m, int ep, int nodes, MoePlacement placement) {
  const int parts = nodes > 1 ? nodes : ep;
  if (parts <= 1 || m.topk <= 1 || m.num_experts < parts) return 1.0;
  const double standard = m.topk * static_cast<double>(parts - 1) / parts;
  const double dedup = (parts - 1) * destination_hit_probability(m, parts, placement);
  return std::clamp(dedup / standard, 0.0, 1.0);
}

double expected_destinations(const MoeSpec& m, int parts, MoePlacement placement) {
  if (parts <= 1) return 1.0;
  return parts * destination_hit_probability(m, parts, placement);
}

double ep_kernel_unit_bound_s(const AcceleratorSpec& acc, double bytes, int units) {
  const double rate = acc.calibration.ep_kernel_unit_bytes_per_s.value;
  if (rate <= 0.0 || units <= 0 || bytes <= 0.0) return 0.0;
  return bytes / (units * rate);
}

}  // namespace projector
