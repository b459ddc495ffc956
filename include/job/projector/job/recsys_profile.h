// The recommendation-family part of a framework profile (data/frameworks/torchrec.yaml,
// `recsys:`): the argument defaults of TorchRec's dlrm_main.py and of Primus' DLRM-v4 keys, what
// the framework runs when a config does not say (optimizers, dtypes, the input pipeline), its
// planner's constants, and the framework's host-side costs. Every value has a source; keys are a
// closed set (kRecsysProfileKeys), so a typo in the data file is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace projector {

struct RecsysProfileValue {
  std::string key;
  std::string text;  // as written (a number, a word, or a comma-separated list)
  std::string source;
  int line = 0;
};

class RecsysProfile {
 public:
  const RecsysProfileValue* find(std::string_view key) const;
  // The value as a number / list of integers; nullopt when absent or not of that form.
  std::optional<double> number(std::string_view key) const;
  std::optional<std::vector<std::int64_t>> int_list(std::string_view key) const;
  std::string text(std::string_view key) const;  // empty when absent
  std::string source(std::string_view key) const;
  // Adds or replaces (a child profile's value replaces its parent's).
  void set(RecsysProfileValue v);
  const std::vector<RecsysProfileValue>& values() const { return values_; }
  bool empty() const { return values_.empty(); }

 private:
  std::vector<RecsysProfileValue> values_;
};

// Every key a `recsys:` block may hold.
const std::vector<std::string_view>& recsys_profile_keys();

}  // namespace projector
