// Literal Python expressions (frontend/torchtitan/python_source.h).
#include "frontend/torchtitan/python_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

namespace projector::frontend_detail {
namespace {

class ExprParser {
 public:
  ExprParser(std::string_view text, std::size_t pos, const std::string& file, int first_line)
      : t_(text), pos_(pos), file_(file), first_line_(first_line) {}

  // Sums of products of terms (Python precedence for + - and *).
  ConfigValue expression() {
    ConfigValue v = product();
    for (skip(); pos_ < t_.size(); skip()) {
      const char op = t_[pos_];
      if (op != '+' && op != '-') break;
      ++pos_;
      const ConfigValue rhs = product();
      v = arithmetic(v, op, rhs);
    }
    return v;
  }
  ConfigValue product() {
    ConfigValue v = term();
    for (skip(); pos_ + 1 < t_.size() && t_[pos_] == '*' && t_[pos_ + 1] != '*'; skip()) {
      ++pos_;
      const ConfigValue rhs = term();
      v = arithmetic(v, '*', rhs);
    }
    return v;
  }
  std::size_t pos() const { return pos_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where(), "torchtitan source", what);
  }
  // Lines counted from the last position asked for (positions only grow): linear in the text.
  SourceLocation where() const {
    if (pos_ < line_pos_) line_pos_ = 0, line_ = first_line_;
    for (; line_pos_ < pos_ && line_pos_ < t_.size(); ++line_pos_) {
      line_ += t_[line_pos_] == '\n' ? 1 : 0;
    }
    return {file_, line_, 0};
  }
  // Whitespace, newlines and comments.
  void skip() {
    while (pos_ < t_.size()) {
      if (std::isspace(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '\\') {
        ++pos_;
      } else if (t_[pos_] == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  bool eat(char c) {
    skip();
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }

  static ConfigValue arithmetic(const ConfigValue& a, char op, const ConfigValue& b) {
    const bool ints = a.kind == ConfigValue::Kind::kInt && b.kind == ConfigValue::Kind::kInt;
    auto num = [](const ConfigValue& v) {
      return v.kind == ConfigValue::Kind::kInt ? static_cast<double>(v.i) : v.f;
    };
    const bool numeric =
        (a.kind == ConfigValue::Kind::kInt || a.kind == ConfigValue::Kind::kFloat) &&
        (b.kind == ConfigValue::Kind::kInt || b.kind == ConfigValue::Kind::kFloat);
    if (!numeric)
      return ConfigValue::make_string(a.to_text() + " " + op + " " + b.to_text(), a.where);
    std::int64_t r = 0;
    const bool overflow = op == '*'   ? __builtin_mul_overflow(a.i, b.i, &r)
                          : op == '+' ? __builtin_add_overflow(a.i, b.i, &r)
                                      : __builtin_sub_overflow(a.i, b.i, &r);
    if (ints && !overflow) return ConfigValue::make_int(r, a.where);  // else as floats
    ConfigValue out;
    out.kind = ConfigValue::Kind::kFloat;
    out.f = op == '*' ? num(a) * num(b) : (op == '+' ? num(a) + num(b) : num(a) - num(b));
    out.s = fmt::format("{}", out.f);
    out.where = a.where;
    return out;
  }

  // Nesting deeper than any real flavor table is refused before it exhausts the stack.
  ConfigValue term() {
    constexpr int kMaxDepth = 200;
    if (depth_ >= kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    ++depth_;
    ConfigValue v = term_at_depth();
    --depth_;
    return v;
  }
  ConfigValue term_at_depth() {
    skip();
    if (pos_ >= t_.size()) fail("unexpected end of expression");
    const SourceLocation at = where();
    const char c = t_[pos_];
    if (c == '"' || c == '\'') return string_literal(at);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number(at);
    if (c == '-') {
      ++pos_;
      ConfigValue v = term();
      if (v.kind == ConfigValue::Kind::kInt && v.i == INT64_MIN) {
        v.kind = ConfigValue::Kind::kFloat;
        v.f = -static_cast<double>(v.i);
      } else if (v.kind == ConfigValue::Kind::kInt) {
        v.i = -v.i;
      }
      if (v.kind == ConfigValue::Kind::kFloat) v.f = -v.f;
      v.s = "-" + v.s;
      return v;
    }
    if (c == '(') {
      ++pos_;
      ConfigValue v = expression();
      expect(')');
      return v;
    }
    if (c == '[') return sequence(at, ']');
    if (c == '{') return dict(at);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name(at);
    fail(fmt::format("unexpected '{}'", c));
  }

  ConfigValue string_literal(const SourceLocation& at) {
    const char q = t_[pos_++];
    std::string s;
    while (pos_ < t_.size() && t_[pos_] != q) {
      if (t_[pos_] == '\\' && pos_ + 1 < t_.size()) ++pos_;
      s += t_[pos_++];
    }
    if (pos_ >= t_.size()) fail("unterminated string");
    ++pos_;
    return ConfigValue::make_string(std::move(s), at);
  }

  ConfigValue number(const SourceLocation& at) {
    std::string s;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) ||
                                t_[pos_] == '.' || t_[pos_] == '_' ||
                                ((t_[pos_] == '-' || t_[pos_] == '+') && !s.empty() &&
                                 (s.back() == 'e' || s.back() == 'E')))) {
      if (t_[pos_] != '_') s += t_[pos_];
      ++pos_;
    }
    const bool is_float = s.find_first_of(".eE") != std::string::npos;
    char* end = nullptr;
    ConfigValue v;
    v.where = at;
    v.s = s;
    if (is_float) {
      v.kind = ConfigValue::Kind::kFloat;
      v.f = std::strtod(s.c_str(), &end);
    } else {
      v.kind = ConfigValue::Kind::kInt;
      v.i = std::strtoll(s.c_str(), &end, 10);
    }
    if (end == nullptr || *end != '\0') fail("malformed number '" + s + "'");
    return v;
  }

  ConfigValue sequence(const SourceLocation& at, char close) {
    ++pos_;
    ConfigValue v;
    v.kind = ConfigValue::Kind::kList;
    v.where = at;
    while (!eat(close)) {
      v.items.push_back(expression());
      if (!eat(',')) {
        expect(close);
        break;
      }
    }
    return v;
  }

  ConfigValue dict(const SourceLocation& at) {
    ++pos_;
    ConfigValue v = ConfigValue::make_map(at);
    while (!eat('}')) {
      const ConfigValue key = expression();
      expect(':');
      v.set(key.kind == ConfigValue::Kind::kString ? key.s : key.to_text(), expression());
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    return v;
  }

  // A name, a dotted name, or a call; calls read as maps of their keyword arguments.
  ConfigValue name(const SourceLocation& at) {
    std::string n;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) ||
                                t_[pos_] == '_' || t_[pos_] == '.')) {
      n += t_[pos_++];
    }
    skip();
    if (pos_ < t_.size() && t_[pos_] == '(') {
      ++pos_;
      ConfigValue call = ConfigValue::make_map(at);
      while (!eat(')')) {
        const std::size_t save = pos_;
        skip();
        std::string key;
        while (pos_ < t_.size() &&
               (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_')) {
          key += t_[pos_++];
        }
        skip();
        const bool keyword = !key.empty() && pos_ < t_.size() && t_[pos_] == '=' &&
                             (pos_ + 1 >= t_.size() || t_[pos_ + 1] != '=');
        if (keyword) {
          ++pos_;
          call.set(key, expression());
        } else {
          pos_ = save;
          expression();  // a positional argument: not needed
        }
        if (!eat(',')) {
          expect(')');
          break;
        }
      }
      call.s = n;  // the callee, for messages
      return call;
    }
    if (n == "True" || n == "False") return ConfigValue::make_bool(n == "True", at);
    if (n == "None") {
      ConfigValue v;
      v.where = at;
      return v;
    }
    return ConfigValue::make_string(n, at);
  }

  std::string_view t_;
  std::size_t pos_;
  const std::string& file_;
  int first_line_;
  int depth_ = 0;
  mutable std::size_t line_pos_ = 0;  // where() has counted lines up to here
  mutable int line_ = first_line_;
};

int line_of(const std::string& text, std::size_t pos) {
  int line = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) line += text[i] == '\n' ? 1 : 0;
  return line;
}

}  // namespace

ConfigValue parse_python_expression(std::string_view text, std::size_t& pos,
                                    const std::string& file, int first_line) {
  ExprParser p(text, pos, file, first_line);
  ConfigValue v = p.expression();
  pos = p.pos();
  return v;
}

ConfigValue python_dict_assignment(const std::string& source, const std::string& file,
                                   const std::string& variable) {
  if (!is_python_identifier(variable)) return ConfigValue{};
  const std::regex assign("(^|\\n)" + variable + "\\s*(:[^=\\n]*)?=\\s*\\{");
  std::smatch m;
  if (!std::regex_search(source, m, assign)) return ConfigValue{};
  std::size_t pos = static_cast<std::size_t>(m.position(0) + m.length(0)) - 1;  // at '{'
  return parse_python_expression(source, pos, file, 1);
}

bool is_python_identifier(std::string_view name) {
  if (name.empty() || name.size() > 256 || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

ConfigValue python_dataclass_defaults(const std::string& source, const std::string& file,
                                      const std::string& class_name) {
  if (!is_python_identifier(class_name)) return ConfigValue{};  // never a pattern of its own
  const std::regex header("(^|\\n)class\\s+" + class_name + "\\b[^\\n]*:\\s*\\n");
  std::smatch m;
  if (!std::regex_search(source, m, header)) return ConfigValue{};
  std::size_t pos = static_cast<std::size_t>(m.position(0) + m.length(0));
  ConfigValue out = ConfigValue::make_map({file, line_of(source, pos), 0});
  const std::regex field_re("^    ([A-Za-z_][A-Za-z0-9_]*)\\s*:[^=]*=\\s*(.*)$");
  while (pos < source.size()) {
    const std::size_t eol = std::min(source.find('\n', pos), source.size());
    const std::string line = source.substr(pos, eol - pos);
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank && !line.starts_with(" ") && !line.starts_with("\t")) break;  // class body ended
    std::smatch fm;
    // std::regex recurses per character: a field line longer than any real one is skipped.
    constexpr std::size_t kMaxFieldLine = 4096;
    if (line.size() <= kMaxFieldLine && std::regex_match(line, fm, field_re)) {
      std::size_t at = pos + static_cast<std::size_t>(fm.position(2));
      try {
        ConfigValue v = parse_python_expression(source, at, file, 1);
        if (v.is_map() && v.s == "field") {
          // field(default_factory=X): the default of class X, read by the caller.
          if (const ConfigValue* f = v.find("default_factory")) v = *f;
        }
        out.set(fm[1].str(), std::move(v));
      } catch (const InputError&) {
        // A default that is not a literal (a lambda, a call with positional arguments): skipped.
      }
    }
    pos = eol + 1;
  }
  return out;
}

}  // namespace projector::frontend_detail
