// Streaming Kineto / Chrome trace reader: zlib's gzread (transparent for uncompressed files) feeds
// a std::streambuf, nlohmann::json's SAX parser walks the document, and a handler keeps only the
// fields the profile needs. Memory is bounded by the kept events, never by the file.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "projector/profile/trace.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector::profile {
namespace {

using Json = nlohmann::json;

// The longest JSON token so far, measured on the raw bytes before the parser buffers it (the
// lexer keeps a whole string or number in memory). A token is a string (quotes to quote, escapes
// honoured) or a run of bytes outside strings that are neither whitespace nor structural.
class TokenBound {
 public:
  explicit TokenBound(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}
  // The offset of the first byte of [p, p + n) that makes a token longer than the bound, or n.
  std::size_t scan(const char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = p[i];
      if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
          run_ = 0;
          continue;
        }
      } else if (c == '"') {
        in_string_ = true;
        run_ = 0;
        continue;
      } else if (separator(c)) {
        run_ = 0;
        continue;
      }
      if (++run_ > max_bytes_) return i;
    }
    return n;
  }

 private:
  static bool separator(char c) {
    return c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || c == ' ' ||
           c == '\n' || c == '\r' || c == '\t';
  }
  std::uint64_t max_bytes_;
  std::uint64_t run_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
};

std::string token_message(std::uint64_t max_bytes) {
  return "a JSON string or number longer than " + std::to_string(max_bytes >> 20) +
         " MiB (TraceLimits::max_token_bytes); not a profiler trace a projection can use";
}

// gzread-backed stream buffer; counts bytes (limit) and newlines (error lines).
class GzBuf : public std::streambuf {
 public:
  GzBuf(const std::string& path, const TraceLimits& limits)
      : path_(path),
        limit_(limits.max_json_bytes),
        token_(limits.max_token_bytes),
        max_token_bytes_(limits.max_token_bytes),
        buf_(1 << 18) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) throw InputError({path, 0, 0}, "", "cannot open the trace file");
    gzbuffer(file_, 1 << 18);
  }
  ~GzBuf() override {
    if (file_ != nullptr) gzclose(file_);
  }
  GzBuf(const GzBuf&) = delete;
  GzBuf& operator=(const GzBuf&) = delete;

  bool compressed() const { return file_ != nullptr && gzdirect(file_) == 0; }
  std::uint64_t bytes() const { return total_; }
  // 1-based line of the next unread character.
  int line() const {
    return static_cast<int>(lines_before_ + std::count(eback(), gptr(), '\n') + 1);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    lines_before_ += static_cast<std::uint64_t>(std::count(eback(), egptr(), '\n'));
    const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
    int err = Z_OK;
    const char* msg = gzerror(file_, &err);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
      throw InputError(
          {path_, 0, 0}, "",
          fmt_error(err == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip data", msg));
    }
    if (n == 0) return traits_type::eof();
    total_ += static_cast<std::uint64_t>(n);
    if (total_ > limit_) {
      throw InputError({path_, 0, 0}, "",
                       "the trace decompresses to more than " + std::to_string(limit_ >> 20) +
                           " MiB (TraceLimits::max_json_bytes); trim it to a few steps");
    }
    const auto got = static_cast<std::size_t>(n);
    const std::size_t over = token_.scan(buf_.data(), got);
    if (over < got) {
      const std::uint64_t line =
          lines_before_ +
          static_cast<std::uint64_t>(std::count(buf_.data(), buf_.data() + over, '\n')) + 1;
      const auto max_line = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
      throw InputError({path_, static_cast<int>(std::min(line, max_line)), 0}, "",
                       token_message(max_token_bytes_));
    }
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string fmt_error(const char* what, const char* zmsg) const {
    return std::string(what) + " after " + std::to_string(total_) +
           " decompressed bytes (zlib: " + (zmsg != nullptr ? zmsg : "?") + ")";
  }
  std::string path_;
  std::uint64_t limit_;
  TokenBound token_;
  std::uint64_t max_token_bytes_;
  std::vector<char> buf_;
  gzFile file_ = nullptr;
  std::uint64_t total_ = 0;
  std::uint64_t lines_before_ = 0;
};

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Operators whose input shapes the profile keeps (GEMMs and attention).
bool shape_operator(std::string_view n) {
  static constexpr std::array<std::string_view, 16> kOps = {
      "aten::mm",
      "aten::addmm",
      "aten::bmm",
      "aten::baddbmm",
      "aten::matmul",
      "aten::linear",
      "aten::_scaled_mm",
      "aten::_grouped_mm",
      "aten::scaled_dot_product_attention",
      "aten::_scaled_dot_product_flash_attention",
      "aten::_scaled_dot_product_efficient_attention",
      "aten::_scaled_dot_product_cudnn_attention",
      "aten::_flash_attention_forward",
      "aten::_flash_attention_backward",
      "aten::_efficient_attention_forward",
      "aten::_scaled_dot_product_flash_attention_backward"};
  return std::find(kOps.begin(), kOps.end(), n) != kOps.end();
}

double dtype_bytes(std::string_view d) {
  if (d == "Float" || d == "float" || d == "Int" || d == "int32") return 4.0;
  if (d == "Double" || d == "Long" || d == "int64") return 8.0;
  if (d == "BFloat16" || d == "Half" || d == "bfloat16" || d == "half" || d == "Short") return 2.0;
  if (d == "Byte" || d == "Char" || d == "Bool" || d == "int8_t" || d == "uint8_t" ||
      starts_with(d, "Float8")) {
    return 1.0;
  }
  return 0.0;
}

// The fields of the event being parsed.
struct RawEvent {
  char ph = 0;
  std::string cat, name;
  double ts = 0.0, dur = 0.0;
  std::int64_t tid = 0;
  std::int64_t correlation = -1, external_id = -1;
  std::int32_t device = -1, stream = -1, group_size = -1;
  std::string collective, dtype;
  double in_nelems = -1.0;
  double allocated = -1.0, reserved = -1.0;
  int device_type = -1;
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> types;
  void reset() {
    ph = 0;
    cat.clear();
    name.clear();
    ts = dur = 0.0;
    tid = 0;
    correlation = external_id = -1;
    device = stream = group_size = -1;
    collective.clear();
    dtype.clear();
    in_nelems = allocated = reserved = -1.0;
    device_type = -1;
    dims.clear();
    types.clear();
  }
};

// A scalar JSON value as the handler sees it.
struct Scalar {
  enum Kind { kNumber, kString, kOther } kind = kOther;
  double number = 0.0;
  std::int64_t integer = 0;
  const std::string* text = nullptr;
};

// The integer part of a JSON number, clamped to int64 (a float beyond it is never converted).
std::int64_t saturated(double v) {
  constexpr double kLimit = 9.2233720368547758e18;  // 2^63
  if (!(v > -kLimit)) return std::numeric_limits<std::int64_t>::min();
  if (!(v < kLimit)) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(v);
}

class Handler {
 public:
  Handler(TraceData& out, const TraceLimits& limits) : out_(out), limits_(limits) {
    out_.names.assign(1, std::string());
    interned_.emplace(std::string(), 0);
  }

  // SAX interface (nlohmann::json_sax).
  bool null() { return value({}); }
  bool boolean(bool) { return value({}); }
  bool number_integer(Json::number_integer_t v) {
    return value({Scalar::kNumber, static_cast<double>(v), v, nullptr});
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return value(
        {Scalar::kNumber, static_cast<double>(v), saturated(static_cast<double>(v)), nullptr});
  }
  bool number_float(Json::number_float_t v, const std::string&) {
    return value({Scalar::kNumber, v, saturated(v), nullptr});
  }
  bool string(std::string& s) { return value({Scalar::kString, 0.0, 0, &s}); }
  bool binary(Json::binary_t&) { return value({}); }
  bool key(std::string& k) {
    if (depth_ < kMaxDepth) keys_[static_cast<std::size_t>(depth_)] = k;
    return true;
  }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) {
    error_pos_ = pos;
    error_ = ex.what();
    const auto at = error_.find("] ");
    if (at != std::string::npos) error_ = error_.substr(at + 2);
    return false;
  }

  bool saw_events() const { return saw_events_; }
  bool root_is_container() const { return root_seen_; }
  const std::string& error() const { return error_; }
  std::size_t error_pos() const { return error_pos_; }

 private:
  static constexpr int kMaxDepth = 16;

  const std::string& key_at(int depth) const {
    static const std::string kNone;
    return depth >= 0 && depth < kMaxDepth ? keys_[static_cast<std::size_t>(depth)] : kNone;
  }

  bool open(bool array) {
    ++depth_;
    if (depth_ == 1) {
      root_seen_ = true;
      root_is_array_ = array;
      if (array) saw_events_ = true;
    }
    if (depth_ < kMaxDepth) {
      is_array_[static_cast<std::size_t>(depth_)] = array;
      keys_[static_cast<std::size_t>(depth_)].clear();
    }
    const int event_depth = root_is_array_ ? 2 : 3;
    if (depth_ == 2 && !root_is_array_ && array && key_at(1) == "traceEvents") saw_events_ = true;
    if (!array && depth_ == event_depth && in_events_array()) {
      in_event_ = true;
      ev_.reset();
      event_bytes_ = 0;
    }
    if (in_event_ && array && depth_ == event_depth + 3 &&
        key_at(event_depth + 1) == "Input Dims") {
      ev_.dims.emplace_back();
    }
    return true;
  }

  bool in_events_array() const {
    return root_is_array_ ? depth_ == 2 : (depth_ == 3 && key_at(1) == "traceEvents");
  }

  bool close() {
    const int event_depth = root_is_array_ ? 2 : 3;
    if (in_event_ && depth_ == event_depth) {
      in_event_ = false;
      commit();
    }
    if (!root_is_array_ && depth_ == 3 && key_at(1) == "deviceProperties") device_open_ = false;
    --depth_;
    return true;
  }

  bool value(const Scalar& v) {
    const int event_depth = root_is_array_ ? 2 : 3;
    if (in_event_) {
      if (depth_ == event_depth) event_field(key_at(depth_), v);
      if (depth_ == event_depth + 1 && key_at(event_depth) == "args") {
        arg_field(key_at(depth_), v);
      }
      if (depth_ >= event_depth + 2 && key_at(event_depth + 1) == "Input Dims" &&
          v.kind == Scalar::kNumber) {
        if (ev_.dims.empty() || depth_ == event_depth + 2) ev_.dims.emplace_back();
        ev_.dims.back().push_back(v.integer);
        event_bytes(sizeof(std::int64_t));
      }
      if (depth_ == event_depth + 2 && key_at(event_depth + 1) == "Input type" &&
          v.kind == Scalar::kString) {
        ev_.types.push_back(*v.text);
        event_bytes(v.text->size());
      }
      return true;
    }
    if (!root_is_array_) top_field(v);
    return true;
  }

  void top_field(const Scalar& v) {
    if (depth_ == 3 && key_at(1) == "deviceProperties" && key_at(3) == "name" &&
        v.kind == Scalar::kString) {
      out_.devices.push_back(*v.text);
    }
    if (depth_ == 2 && key_at(1) == "distributedInfo" && v.kind == Scalar::kNumber) {
      if (key_at(2) == "rank") out_.rank = static_cast<int>(v.integer);
      if (key_at(2) == "world_size") out_.world_size = static_cast<int>(v.integer);
    }
  }

  static std::int64_t id_of(const Scalar& v) {
    if (v.kind == Scalar::kNumber) return v.integer;
    if (v.kind == Scalar::kString) {
      return static_cast<std::int64_t>(std::hash<std::string>{}(*v.text) >> 1);
    }
    return 0;
  }

  void event_field(const std::string& k, const Scalar& v) {
    if (k == "ph" && v.kind == Scalar::kString && !v.text->empty()) ev_.ph = (*v.text)[0];
    if (k == "cat" && v.kind == Scalar::kString) ev_.cat = *v.text;
    if (k == "name" && v.kind == Scalar::kString) ev_.name = *v.text;
    if (k == "ts" && v.kind == Scalar::kNumber) ev_.ts = v.number;
    if (k == "dur" && v.kind == Scalar::kNumber) ev_.dur = v.number;
    if (k == "tid") ev_.tid = id_of(v);
  }

  void arg_field(const std::string& k, const Scalar& v) {
    if (v.kind == Scalar::kNumber) {
      if (k == "correlation") ev_.correlation = v.integer;
      if (k == "External id") ev_.external_id = v.integer;
      if (k == "device") ev_.device = static_cast<std::int32_t>(v.integer);
      if (k == "stream") ev_.stream = static_cast<std::int32_t>(v.integer);
      if (k == "Group size") ev_.group_size = static_cast<std::int32_t>(v.integer);
      if (k == "In msg nelems") ev_.in_nelems = v.number;
      if (k == "Total Allocated") ev_.allocated = v.number;
      if (k == "Total Reserved") ev_.reserved = v.number;
      if (k == "Device Type") ev_.device_type = static_cast<int>(v.integer);
    } else if (v.kind == Scalar::kString) {
      if (k == "Collective name") ev_.collective = *v.text;
      if (k == "dtype") ev_.dtype = *v.text;
    }
  }

  std::uint32_t intern(const std::string& s) {
    auto it = interned_.find(s);
    if (it != interned_.end()) return it->second;
    keep_bytes(s.size());
    const auto id = static_cast<std::uint32_t>(out_.names.size());
    out_.names.push_back(s);
    interned_.emplace(s, id);
    return id;
  }

  void keep() {
    if (++kept_ > limits_.max_kept_events) {
      throw InputError({out_.path, 0, 0}, "traceEvents",
                       "more than " + std::to_string(limits_.max_kept_events) +
                           " GPU and annotation events (TraceLimits::max_kept_events); trim the "
                           "trace to a few steps");
    }
  }

  // Adds `bytes` to `used`; past `limit` the trace is refused with `what` (key `key`).
  void charge(std::uint64_t& used, std::uint64_t bytes, std::uint64_t limit, const char* key,
              const std::string& what) const {
    used += bytes;
    if (used > limit) {
      throw InputError({out_.path, 0, 0}, key,
                       what + " exceed " + std::to_string(limit >> 20) + " MiB");
    }
  }

  // One event's operator shapes and types are held until the event closes: bounded like a token.
  void event_bytes(std::uint64_t bytes) {
    charge(event_bytes_, bytes, limits_.max_token_bytes, "Input Dims",
           "one event's operator shapes (TraceLimits::max_token_bytes; not a profiler trace)");
  }

  void keep_bytes(std::uint64_t bytes) {
    charge(kept_bytes_, bytes, limits_.max_kept_bytes, "traceEvents",
           "the kept names and operator shapes (TraceLimits::max_kept_bytes; trim the trace to a "
           "few steps)");
  }

  Span span() { return Span{ev_.ts, ev_.dur, ev_.tid, intern(ev_.name)}; }

  void commit() {
    ++out_.events_total;
    if (ev_.ph == 'i' || ev_.ph == 'I') {
      if (ev_.name == "[memory]" && ev_.allocated >= 0.0) {
        keep();
        out_.memory.push_back(
            {ev_.ts, ev_.allocated, std::max(ev_.reserved, 0.0), std::max(ev_.device_type, 0)});
      }
      return;
    }
    if (ev_.ph != 'X') return;
    const std::string& c = ev_.cat;
    if (iequals(c, "kernel") || iequals(c, "gpu_memcpy") || iequals(c, "gpu_memset") ||
        iequals(c, "memcpy") || iequals(c, "memset")) {
      keep();
      GpuEvent g;
      g.ts_us = ev_.ts;
      g.dur_us = ev_.dur;
      g.correlation = ev_.correlation;
      g.external_id = ev_.external_id;
      g.name = intern(ev_.name);
      g.device = ev_.device;
      g.stream = ev_.stream >= 0 ? ev_.stream : static_cast<std::int32_t>(ev_.tid);
      g.activity = iequals(c, "kernel")                                 ? GpuActivity::kKernel
                   : (iequals(c, "gpu_memcpy") || iequals(c, "memcpy")) ? GpuActivity::kMemcpy
                                                                        : GpuActivity::kMemset;
      if (!ev_.collective.empty()) g.collective_name = intern(ev_.collective);
      g.group_size = ev_.group_size;
      const double b = dtype_bytes(ev_.dtype);
      if (ev_.in_nelems >= 0.0 && b > 0.0) g.message_bytes = ev_.in_nelems * b;
      out_.gpu.push_back(g);
    } else if ((c == "cuda_runtime" || c == "cuda_driver" || c == "hip_runtime" ||
                c == "Runtime") &&
               ev_.correlation >= 0) {
      keep();
      out_.launches.push_back({ev_.ts, ev_.correlation, ev_.tid});
    } else if (c == "user_annotation" || c == "gpu_user_annotation" || c == "cpu_op" ||
               c == "Operator") {
      commit_cpu(c == "gpu_user_annotation");
    }
  }

  void commit_cpu(bool gpu_side) {
    const std::string& n = ev_.name;
    if (starts_with(n, "ProfilerStep#")) {
      keep();
      (gpu_side ? out_.gpu_steps : out_.cpu_steps).push_back(span());
    } else if (gpu_side) {
      return;
    } else if (starts_with(n, "Optimizer.step")) {
      keep();
      out_.optimizer_spans.push_back(span());
    } else if (ends_with(n, "(F)") || ends_with(n, "(B)") || ends_with(n, "(W)")) {
      keep();
      out_.phase_spans.push_back(span());
    } else if (starts_with(n, "autograd::engine::evaluate_function")) {
      keep();
      out_.backward_spans.push_back(span());
    } else if (shape_operator(n) && !ev_.dims.empty()) {
      keep();
      std::uint64_t bytes = 0;
      for (const auto& d : ev_.dims) bytes += d.size() * sizeof(std::int64_t);
      for (const auto& ty : ev_.types) bytes += ty.size();
      keep_bytes(bytes);
      out_.shapes.push_back(
          {ev_.external_id, intern(n), std::move(ev_.dims), std::move(ev_.types)});
      ev_.dims.clear();
      ev_.types.clear();
    }
  }

  TraceData& out_;
  const TraceLimits& limits_;
  std::unordered_map<std::string, std::uint32_t> interned_;
  std::array<std::string, kMaxDepth> keys_;
  std::array<bool, kMaxDepth> is_array_{};
  int depth_ = 0;
  bool root_seen_ = false;
  bool root_is_array_ = false;
  bool saw_events_ = false;
  bool in_event_ = false;
  bool device_open_ = false;
  std::uint64_t kept_ = 0;
  std::uint64_t kept_bytes_ = 0;
  std::uint64_t event_bytes_ = 0;
  RawEvent ev_;
  std::string error_;
  std::size_t error_pos_ = 0;
};

void check_shape(const Handler& h, const TraceData& t) {
  if (!h.root_is_container() || !h.saw_events()) {
    throw InputError({t.path, 0, 0}, "traceEvents",
                     "not a Chrome / Kineto trace: the JSON has no traceEvents array");
  }
}

}  // namespace

TraceData read_trace(const std::string& path, const TraceLimits& limits) {
  TraceData t;
  t.path = path;
  // A regular file (not /dev/zero or a FIFO) within TraceLimits::max_file_bytes.
  check_input_file(path, limits.max_file_bytes);
  GzBuf buf(path, limits);
  std::istream in(&buf);
  Handler h(t, limits);
  const bool ok = Json::sax_parse(in, &h, nlohmann::json::input_format_t::json, true, false);
  t.gzip = buf.compressed();
  t.json_bytes = buf.bytes();
  if (!ok) {
    throw InputError({path, buf.line(), 0}, "",
                     "not valid JSON (" + h.error() + "); is this a PyTorch profiler trace?");
  }
  check_shape(h, t);
  return t;
}

TraceData parse_trace_text(const std::string& json, const std::string& label,
                           const TraceLimits& limits) {
  TraceData t;
  t.path = label;
  t.json_bytes = json.size();
  TokenBound token(limits.max_token_bytes);
  if (const std::size_t over = token.scan(json.data(), json.size()); over < json.size()) {
    const auto line = 1 + std::count(json.begin(), json.begin() + static_cast<long>(over), '\n');
    throw InputError({label, static_cast<int>(line), 0}, "", token_message(limits.max_token_bytes));
  }
  Handler h(t, limits);
  if (!Json::sax_parse(json, &h, nlohmann::json::input_format_t::json, true, false)) {
    const std::size_t pos = std::min(h.error_pos(), json.size());
    const auto line = 1 + std::count(json.begin(), json.begin() + static_cast<long>(pos), '\n');
    throw InputError({label, static_cast<int>(line), 0}, "",
                     "not valid JSON (" + h.error() + "); is this a PyTorch profiler trace?");
  }
  check_shape(h, t);
  return t;
}

}  // namespace projector::profile
