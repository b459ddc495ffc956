#include "projector/frontend/layer_pattern.h"

#include <fmt/format.h>

#include <cctype>

namespace projector {
namespace {

// Recursive-descent parser: expr := term ('+' term)* ; term := atom ('*' atom)* ;
// atom := int | '[' [expr (',' expr)*] ']' | '(' expr ')'.
class ListParser {
 public:
  explicit ListParser(const std::string& text) : text_(text) {}

  std::optional<PyValue> parse(std::string& error) {
    std::optional<PyValue> v = expr(error);
    if (!v) return std::nullopt;
    skip_space();
    if (pos_ != text_.size()) {
      error = fmt::format("unexpected '{}' at position {}", text_[pos_], pos_);
      return std::nullopt;
    }
    return v;
  }

 private:
  static constexpr std::size_t kMaxElements = 1 << 20;  // refuse absurd repetitions
  static constexpr long long kMaxInteger = 1LL << 40;   // so sums and products cannot overflow
  static constexpr int kMaxDepth = 64;                  // nesting: bounds the recursion

  // `v` when within +-kMaxInteger; else sets `error`.
  static bool in_range(long long v, std::string& error) {
    if (v >= -kMaxInteger && v <= kMaxInteger) return true;
    error = "integer too large";
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::optional<PyValue> expr(std::string& error) {
    std::optional<PyValue> left = term(error);
    if (!left) return std::nullopt;
    while (accept('+')) {
      std::optional<PyValue> right = term(error);
      if (!right) return std::nullopt;
      if (left->is_list != right->is_list) {
        error = "cannot add a list and an integer";
        return std::nullopt;
      }
      if (left->is_list) {
        if (left->list.size() + right->list.size() > kMaxElements) {
          error = "list too long";
          return std::nullopt;
        }
        left->list.insert(left->list.end(), right->list.begin(), right->list.end());
      } else {
        left->integer += right->integer;  // both within 2^40: no overflow
        if (!in_range(left->integer, error)) return std::nullopt;
      }
    }
    return left;
  }

  std::optional<PyValue> term(std::string& error) {
    std::optional<PyValue> left = atom(error);
    if (!left) return std::nullopt;
    while (accept('*')) {
      std::optional<PyValue> right = atom(error);
      if (!right) return std::nullopt;
      if (left->is_list && right->is_list) {
        error = "cannot multiply two lists";
        return std::nullopt;
      }
      if (!left->is_list && !right->is_list) {
        long long product = 0;
        if (__builtin_mul_overflow(left->integer, right->integer, &product) ||
            !in_range(product, error)) {
          error = "integer too large";
          return std::nullopt;
        }
        left->integer = product;
        continue;
      }
      PyValue& list = left->is_list ? *left : *right;
      const long long n = left->is_list ? right->integer : left->integer;
      if (n < 0 || list.list.size() * static_cast<std::size_t>(n) > kMaxElements) {
        error = "list repetition count out of range";
        return std::nullopt;
      }
      PyValue out;
      out.is_list = true;
      for (long long k = 0; k < n; ++k)
        out.list.insert(out.list.end(), list.list.begin(), list.list.end());
      left = std::move(out);
    }
    return left;
  }

  std::optional<PyValue> atom(std::string& error) {
    skip_space();
    if (pos_ >= text_.size()) {
      error = "unexpected end of expression";
      return std::nullopt;
    }
    if (depth_ >= kMaxDepth) {
      error = fmt::format("nested more than {} levels deep", kMaxDepth);
      return std::nullopt;
    }
    struct Nest {  // depth of '(' and '[' open around this atom
      int& d;
      explicit Nest(int& depth) : d(++depth) {}
      ~Nest() { --d; }
    } nest(depth_);
    if (accept('(')) {
      std::optional<PyValue> v = expr(error);
      if (!v) return std::nullopt;
      if (!accept(')')) {
        error = "missing ')'";
        return std::nullopt;
      }
      return v;
    }
    if (accept('[')) {
      PyValue v;
      v.is_list = true;
      if (accept(']')) return v;
      while (true) {
        std::optional<PyValue> item = expr(error);
        if (!item) return std::nullopt;
        if (item->is_list) {
          error = "nested lists are not supported";
          return std::nullopt;
        }
        if (v.list.size() >= kMaxElements) {
          error = "list too long";
          return std::nullopt;
        }
        v.list.push_back(item->integer);
        if (accept(']')) return v;
        if (!accept(',')) {
          error = "expected ',' or ']'";
          return std::nullopt;
        }
        if (accept(']')) return v;  // trailing comma
      }
    }
    bool negative = false;
    if (text_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      error = fmt::format("unexpected '{}' at position {}", pos_ < text_.size() ? text_[pos_] : ' ',
                          pos_);
      return std::nullopt;
    }
    long long n = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      n = n * 10 + (text_[pos_] - '0');
      if (n > (1LL << 40)) {
        error = "integer too large";
        return std::nullopt;
      }
      ++pos_;
    }
    PyValue v;
    v.integer = negative ? -n : n;
    return v;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<PyValue> eval_list_expression(const std::string& text, std::string& error) {
  ListParser parser(text);
  return parser.parse(error);
}

std::optional<std::vector<int>> moe_pattern_from_int(long long freq, int num_layers,
                                                     std::string& error) {
  if (freq <= 0) {
    error = fmt::format("must be a positive integer or a list, got {}", freq);
    return std::nullopt;
  }
  std::vector<int> pattern(static_cast<std::size_t>(num_layers));
  for (int i = 0; i < num_layers; ++i) pattern[i] = (i % freq == 0) ? 1 : 0;
  return pattern;
}

std::optional<std::vector<int>> moe_pattern_from_list(const std::vector<long long>& list,
                                                      int num_layers, std::string& error) {
  if (static_cast<int>(list.size()) < num_layers) {
    error = fmt::format("has {} entries but num_layers is {}", list.size(), num_layers);
    return std::nullopt;
  }
  std::vector<int> pattern(static_cast<std::size_t>(num_layers));
  for (int i = 0; i < num_layers; ++i) {
    if (list[i] != 0 && list[i] != 1) {
      error = fmt::format("entries must be 0 or 1, entry {} is {}", i, list[i]);
      return std::nullopt;
    }
    pattern[i] = static_cast<int>(list[i]);
  }
  return pattern;
}

namespace {

// The expanded layout's symbols and group nesting: far beyond any pipeline (a symbol per layer
// or stage boundary), and bounds on memory and recursion.
constexpr std::size_t kMaxLayoutSymbols = 1 << 20;
constexpr int kMaxLayoutDepth = 64;

// Appends `n` copies of `piece` to `out`, unless the result would exceed kMaxLayoutSymbols.
bool append_repeated(std::string& out, const std::string& piece, long long n, std::string& error) {
  if (n > 0 && piece.size() > (kMaxLayoutSymbols - out.size()) / static_cast<std::size_t>(n)) {
    error = fmt::format("layout expands to more than {} symbols", kMaxLayoutSymbols);
    return false;
  }
  for (long long k = 0; k < n; ++k) out += piece;
  return true;
}

// Expands "(...)*N" groups and "x*N" symbol repeats into a flat string of symbols and '|'.
bool expand_layout(const std::string& s, std::size_t& pos, bool in_group, std::string& out,
                   std::string& error, int depth = 0) {
  if (depth > kMaxLayoutDepth) {
    error = fmt::format("groups nested more than {} levels deep", kMaxLayoutDepth);
    return false;
  }
  auto read_count = [&](long long& n) -> bool {
    if (pos < s.size() && s[pos] == '*') {
      ++pos;
      if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos]))) {
        error = fmt::format("expected a count after '*' at position {}", pos);
        return false;
      }
      n = 0;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        n = n * 10 + (s[pos] - '0');
        if (n > 100000) {
          error = "repeat count too large";
          return false;
        }
        ++pos;
      }
      return true;
    }
    n = 1;
    return true;
  };
  while (pos < s.size()) {
    const char c = s[pos];
    if (c == ')') {
      if (!in_group) {
        error = fmt::format("unbalanced ')' at position {}", pos);
        return false;
      }
      return true;
    }
    if (c == '(') {
      ++pos;
      std::string group;
      if (!expand_layout(s, pos, true, group, error, depth + 1)) return false;
      if (pos >= s.size() || s[pos] != ')') {
        error = "missing ')'";
        return false;
      }
      ++pos;
      long long n = 1;
      if (!read_count(n)) return false;
      if (!append_repeated(out, group, n, error)) return false;
      continue;
    }
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      ++pos;
      continue;
    }
    if (c == '|' || c == 'E' || c == 't' || c == 'm' || c == 'L') {
      ++pos;
      long long n = 1;
      if (!read_count(n)) return false;
      if (!append_repeated(out, std::string(1, c), n, error)) return false;
      continue;
    }
    error = fmt::format("unexpected '{}' at position {} (allowed: E t m L | ( ) *N)", c, pos);
    return false;
  }
  if (in_group) {
    error = "missing ')'";
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<LayoutStage>> parse_pipeline_layout(const std::string& text,
                                                              std::string& error) {
  std::string s = text;
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  std::string flat;
  std::size_t pos = 0;
  if (!expand_layout(s, pos, false, flat, error)) return std::nullopt;
  std::vector<LayoutStage> stages(1);
  for (char c : flat) {
    LayoutStage& st = stages.back();
    switch (c) {
      case '|':
        stages.emplace_back();
        break;
      case 'E':
        st.embedding = true;
        break;
      case 't':
        ++st.decoder_layers;
        break;
      case 'm':
        ++st.mtp_layers;
        break;
      case 'L':
        st.loss = true;
        break;
      default:
        break;
    }
  }
  return stages;
}

std::optional<GroupRoutingProblem> group_routing_problem(int num_experts, int topk, int groups,
                                                         int picked, int min_group_size) {
  if (groups < 1 || num_experts % groups != 0 || num_experts / groups < min_group_size) {
    return GroupRoutingProblem{
        true, fmt::format("{} experts do not split into {} groups of at least {}", num_experts,
                          groups, min_group_size)};
  }
  const int per_group = num_experts / groups;
  if (picked > groups || picked * per_group < topk) {
    return GroupRoutingProblem{false,
                               fmt::format("top-{} routing does not fit in {} of {} groups of {} "
                                           "experts",
                                           topk, picked, groups, per_group)};
  }
  return std::nullopt;
}

void set_hybrid_layer(char symbol, const LayerSpec& mixer, const MoeSpec& moe, LayerSpec& layer) {
  switch (symbol) {
    case 'M':
      layer.kind = mixer.kind;
      layer.mamba = mixer.mamba;
      layer.linear = mixer.linear;
      break;
    case '*':
    case '+':
      layer.kind = LayerKind::kAttention;
      break;
    case 'E':
      layer.kind = LayerKind::kFfn;
      layer.is_moe = true;
      layer.moe = moe;
      break;
    default:
      layer.kind = LayerKind::kFfn;
      break;
  }
}

}  // namespace projector
