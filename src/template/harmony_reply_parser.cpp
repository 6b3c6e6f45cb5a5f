// gpt-oss's Harmony replies: a sequence of messages, each a header up to <|message|>
// ("<|channel|>analysis", "<|start|>assistant<|channel|>commentary to=functions.NAME
// <|constrain|>json") and a body up to <|end|>, <|call|> or <|return|>. The analysis
// channel is reasoning, a body addressed to functions.NAME is a call's arguments, the rest
// (final, commentary preambles) is the answer. Text with no header is the answer as is.
#include "template/reply_parsers.h"

namespace ember {
namespace {

constexpr std::string_view kMessage = "<|message|>", kChannel = "<|channel|>";
constexpr size_t kMaxHeader = 512;  // a longer "header" is text that only looked like one

const std::vector<std::string_view>& body_ends() {
  static const std::vector<std::string_view> ends{"<|end|>", "<|call|>", "<|return|>"};
  return ends;
}

// The word after `key` in a header, up to a space or the next <|...|> marker.
std::string header_word(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  const size_t from = at + key.size();
  const size_t to = header.find_first_of(" <", from);
  return std::string(header.substr(from, (to == std::string_view::npos ? header.size() : to) - from));
}

class HarmonyReplyParser final : public ReplyParser {
 public:
  explicit HarmonyReplyParser(const ReplyParserOptions& o) : parse_tools_(o.parse_tools), buf_(o.prefill) {}

  ReplyPieces push(std::string_view text) override {
    buf_ += text;
    ReplyPieces out;
    while (step(out, false)) {}
    return out;
  }

  ReplyPieces finish() override {
    ReplyPieces out;
    while (step(out, true)) {}
    return out;
  }

 private:
  bool step(ReplyPieces& out, bool final) { return in_body_ ? body(out, final) : header(out, final); }

  bool header(ReplyPieces& out, bool final) {
    if (buf_.empty()) return false;
    const bool looks_like_header = buf_.rfind(kChannel.substr(0, 2), 0) == 0 || buf_ == "<";
    if (looks_like_header) {
      if (const size_t at = buf_.find(kMessage); at != std::string::npos && at <= kMaxHeader) {
        start_body(buf_.substr(0, at + kMessage.size()));
        buf_.erase(0, at + kMessage.size());
        return true;
      }
      if (!final && buf_.size() < kMaxHeader + kMessage.size()) return false;
    }
    header_.clear();  // text without a header: the answer
    call_name_.clear();
    kind_ = ReplyPiece::Kind::Content;
    in_body_ = true;
    return true;
  }

  void start_body(std::string header) {
    const std::string channel = header_word(header, kChannel);
    const std::string recipient = header_word(header, "to=");
    header_ = std::move(header);
    call_name_.clear();
    kind_ = channel == "analysis" ? ReplyPiece::Kind::Reasoning : ReplyPiece::Kind::Content;
    if (parse_tools_ && recipient.rfind("functions.", 0) == 0) {
      call_name_ = recipient.substr(10);
      kind_ = ReplyPiece::Kind::ToolCall;
    }
    in_body_ = true;
  }

  bool body(ReplyPieces& out, bool final) {
    size_t end = std::string::npos, end_size = 0;
    for (std::string_view e : body_ends()) {
      if (const size_t at = buf_.find(e); at < end) end = at, end_size = e.size();
    }
    if (end != std::string::npos) {
      give(out, std::string_view(buf_).substr(0, end), buf_.substr(end, end_size));
      buf_.erase(0, end + end_size);
      in_body_ = false;
      return true;
    }
    if (kind_ == ReplyPiece::Kind::ToolCall) {  // a call is given whole
      if (final) give(out, buf_, "");
      if (final) buf_.clear();
      return false;
    }
    const size_t hold = final ? 0 : marker_prefix_tail(buf_, body_ends());
    append_text(out, kind_, std::string_view(buf_).substr(0, buf_.size() - hold));
    buf_.erase(0, buf_.size() - hold);
    return false;
  }

  void give(ReplyPieces& out, std::string_view text, const std::string& end_marker) {
    if (kind_ != ReplyPiece::Kind::ToolCall) {
      append_text(out, kind_, text);
      return;
    }
    if (std::optional<ToolCall> call = read_named_call(call_name_, text)) {
      out.push_back(ReplyPiece{ReplyPiece::Kind::ToolCall, {}, std::move(*call)});
      return;
    }
    append_text(out, ReplyPiece::Kind::Content, header_ + std::string(text) + end_marker);
  }

  bool parse_tools_;
  std::string buf_;
  bool in_body_ = false;
  ReplyPiece::Kind kind_ = ReplyPiece::Kind::Content;
  std::string header_;     // of the message being read, given back with a malformed call
  std::string call_name_;
};

}  // namespace

std::unique_ptr<ReplyParser> make_harmony_reply_parser(const ReplyParserOptions& options) {
  return std::make_unique<HarmonyReplyParser>(options);
}

}  // namespace ember
