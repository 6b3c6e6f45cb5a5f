// Replies whose reasoning and tool calls are marked by tags in the text: an optional
// <think>…</think> at the start (or already opened by the prompt), then the answer, with
// tool calls between their syntax's markers. Llama 3's calls have no opening tag when the
// reply is only a call: a reply that starts with '{' is read as calls and given back as
// content if it is not one.
#include "template/reply_parsers.h"

namespace ember {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

struct CallMarkers {
  std::string_view open, close;  // close empty: the call runs to the end of the reply
};

CallMarkers call_markers(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::Hermes: return {"<tool_call>", "</tool_call>"};
    case ToolCallSyntax::Llama3Json: return {"<|python_tag|>", ""};
    case ToolCallSyntax::Mistral: return {"[TOOL_CALLS]", ""};
    default: return {};
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

class TaggedReplyParser final : public ReplyParser {
 public:
  explicit TaggedReplyParser(const ReplyParserOptions& o)
      : syntax_(o.parse_tools ? o.format.tools : ToolCallSyntax::None),
        markers_(call_markers(syntax_)),
        think_(o.format.think_tags),
        mode_(o.reasoning_open ? Mode::Reasoning : Mode::Start),
        buf_(o.prefill) {
    if (!markers_.open.empty()) open_markers_.push_back(markers_.open);
    // Nothing can open at the start: text is the answer as it comes, blanks included.
    if (mode_ == Mode::Start && !think_ && syntax_ != ToolCallSyntax::Llama3Json) mode_ = Mode::Content;
  }

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
  enum class Mode { Start, Content, Reasoning, Call };

  // Consumes what it can of buf_; false when it must wait for more text (or is done).
  bool step(ReplyPieces& out, bool final) {
    switch (mode_) {
      case Mode::Start: return start(out, final);
      case Mode::Content: return content(out, final);
      case Mode::Reasoning: return reasoning(out, final);
      case Mode::Call: return call(out, final);
    }
    return false;
  }

  // The start of the reply, or what follows reasoning or a call: <think>, a bare Llama 3
  // call, or the answer (its leading blank lines dropped after reasoning or a call).
  bool start(ReplyPieces& out, bool final) {
    size_t first = 0;
    while (first < buf_.size() && is_space(buf_[first])) ++first;
    if (first == buf_.size()) {
      if (!final) return false;
      if (!drop_space_) append_text(out, ReplyPiece::Kind::Content, buf_);
      buf_.clear();
      return false;
    }
    const std::string_view rest = std::string_view(buf_).substr(first);
    if (think_ && !after_start_) {
      if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
        buf_.erase(0, first + kThinkOpen.size());
        mode_ = Mode::Reasoning;
        return true;
      }
      if (!final && kThinkOpen.substr(0, rest.size()) == rest) return false;
    }
    after_start_ = true;
    if (syntax_ == ToolCallSyntax::Llama3Json && rest.front() == '{') {
      buf_.erase(0, first);
      open_.clear();
      close_ = {};
      mode_ = Mode::Call;
      return true;
    }
    if (drop_space_) buf_.erase(0, first);
    mode_ = Mode::Content;
    return true;
  }

  bool content(ReplyPieces& out, bool final) {
    if (!markers_.open.empty()) {
      if (const size_t at = buf_.find(markers_.open); at != std::string::npos) {
        append_text(out, ReplyPiece::Kind::Content, std::string_view(buf_).substr(0, at));
        buf_.erase(0, at + markers_.open.size());
        open_ = std::string(markers_.open);
        close_ = markers_.close;
        mode_ = Mode::Call;
        return true;
      }
    }
    release(out, ReplyPiece::Kind::Content, final ? 0 : marker_prefix_tail(buf_, open_markers_));
    return false;
  }

  bool reasoning(ReplyPieces& out, bool final) {
    if (const size_t at = buf_.find(kThinkClose); at != std::string::npos) {
      append_text(out, ReplyPiece::Kind::Reasoning, std::string_view(buf_).substr(0, at));
      buf_.erase(0, at + kThinkClose.size());
      after_start_ = drop_space_ = true;
      mode_ = Mode::Start;
      return true;
    }
    release(out, ReplyPiece::Kind::Reasoning, final ? 0 : marker_prefix_tail(buf_, {kThinkClose}));
    return false;
  }

  bool call(ReplyPieces& out, bool final) {
    if (!close_.empty()) {
      if (const size_t at = buf_.find(close_); at != std::string::npos) {
        give_calls(out, std::string_view(buf_).substr(0, at), true);
        buf_.erase(0, at + close_.size());
        drop_space_ = true;
        mode_ = Mode::Start;
        return true;
      }
    }
    if (final) {
      give_calls(out, buf_, false);
      buf_.clear();
    }
    return false;
  }

  // The calls in `body`, or its text back as content when they are not well formed.
  void give_calls(ReplyPieces& out, std::string_view body, bool closed) {
    if (auto calls = read_tool_calls(syntax_, body)) {
      for (ToolCall& c : *calls) out.push_back(ReplyPiece{ReplyPiece::Kind::ToolCall, {}, std::move(c)});
      return;
    }
    append_text(out, ReplyPiece::Kind::Content, open_ + std::string(body) + (closed ? std::string(close_) : ""));
  }

  // Gives out buf_ as `kind` but for its last `hold` bytes.
  void release(ReplyPieces& out, ReplyPiece::Kind kind, size_t hold) {
    append_text(out, kind, std::string_view(buf_).substr(0, buf_.size() - hold));
    buf_.erase(0, buf_.size() - hold);
  }

  ToolCallSyntax syntax_;
  CallMarkers markers_;
  std::vector<std::string_view> open_markers_;
  bool think_;
  Mode mode_;
  std::string buf_;               // text not yet given out
  bool after_start_ = false;      // past the point where <think> may open
  bool drop_space_ = false;       // blank text before the next answer text is dropped
  std::string open_;              // the marker that opened the call being read
  std::string_view close_;
};

}  // namespace

std::unique_ptr<ReplyParser> make_tagged_reply_parser(const ReplyParserOptions& options) {
  return std::make_unique<TaggedReplyParser>(options);
}

}  // namespace ember
