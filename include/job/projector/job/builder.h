// The job builder: the one place that turns a neutral JobDraft into a JobSpec. It derives the
// parallel layout (TP ... EP defaults, ETP by the profile's preference, VPP, DP and expert DP in 64
// bits, the virtual stages: balanced, uneven, first / last counts or a stated layout), the batch
// sizes, resolves an `auto` schedule with the schedule module's selection rule, applies the
// framework profile's defaults, loads the hardware, and checks the result against the one rule set
// (job/rules.h). Every value it chooses is appended to JobSpec::defaults with its reason and, for a
// profile value, the profile's name.
//
//   JobDraft draft = adapter.normalize(input);     // frontend/adapter.h, validate's mapper, tests
//   JobSpec job = finalize_job(draft, cluster);    // derived, defaulted, legal
#pragma once

#include "projector/job/draft.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/util/error.h"

namespace projector {

// A broken rule. An InputError naming the draft field's adapter key and location (so the CLI
// prints "exp.yaml:12: tensor_model_parallel_size: ..."), plus the rule and the field for callers
// that map it themselves (the validation mapper).
class JobRuleError : public InputError {
 public:
  JobRuleError(LayoutRule rule, DraftField field, SourceLocation where, std::string key,
               const std::string& message)
      : InputError(std::move(where), std::move(key), message), rule_(rule), field_(field) {}
  LayoutRule rule() const { return rule_; }
  DraftField field() const { return field_; }

 private:
  LayoutRule rule_;
  DraftField field_;
};

// The draft field a rule is reported against.
DraftField field_of(LayoutRule rule);

JobSpec finalize_job(const JobDraft& draft, const ClusterRequest& cluster);

}  // namespace projector
