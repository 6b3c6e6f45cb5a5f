// The message object of Anthropic's Messages API and its event stream (messages_api.h).
#include "server/messages_api.h"

namespace ember::server {
namespace {

using Json = json::Value;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string stop_reason(const StreamResult& r, bool made_calls) {
  if (r.finish_reason == "length") return "max_tokens";
  return made_calls ? "tool_use" : "end_turn";
}

// Anthropic's ids for tool uses: "toolu_" and the call's random part.
std::string tool_use_id(const ToolCall& c) { return "toolu_" + c.id.substr(c.id.rfind('_') + 1); }

Json input_of(const ToolCall& c) {
  try {
    return json::parse(c.arguments, "tool call arguments");
  } catch (...) {
    return Json::object();  // the parsers only make calls whose arguments are an object
  }
}

Json usage(const StreamResult& r, bool with_input) {
  Json u = Json::object();
  if (with_input) {
    u["input_tokens"] = r.prompt_tokens - r.cached_tokens;
    u["cache_creation_input_tokens"] = 0;
    u["cache_read_input_tokens"] = r.cached_tokens;
  }
  u["output_tokens"] = r.completion_tokens;
  return u;
}

class MessagesWriter final : public ReplyWriter {
 public:
  explicit MessagesWriter(const std::string& model) : model_(model), id_(random_id("msg_")) {}

  std::string whole(const ParsedReply& reply, const std::vector<TokenLogprobs>&, const StreamResult& result) override {
    Json content = Json::array();
    if (!reply.reasoning.empty()) content.push_back(Json{{"type", "thinking"}, {"thinking", reply.reasoning}, {"signature", ""}});
    if (!reply.content.empty() || reply.tool_calls.empty()) content.push_back(Json{{"type", "text"}, {"text", reply.content}});
    for (const ToolCall& c : reply.tool_calls)
      content.push_back(Json{{"type", "tool_use"}, {"id", tool_use_id(c)}, {"name", c.name}, {"input", input_of(c)}});
    Json m = message(content);
    m["stop_reason"] = stop_reason(result, !reply.tool_calls.empty());
    m["usage"] = usage(result, true);
    return dump(m);
  }

  std::string stream_start() override {
    Json m = message(Json::array());
    m["usage"] = Json{{"input_tokens", 0}, {"output_tokens", 0}};
    return event("message_start", Json{{"message", m}}) + event("ping", Json::object());
  }

  std::string stream_pieces(const ReplyPieces& pieces, const std::vector<TokenLogprobs>&) override {
    std::string out;
    for (const ReplyPiece& p : pieces) {
      if (p.kind == ReplyPiece::Kind::ToolCall) {
        made_calls_ = true;
        out += close_block();
        out += open_block(Json{{"type", "tool_use"}, {"id", tool_use_id(p.call)}, {"name", p.call.name}, {"input", Json::object()}});
        out += delta(Json{{"type", "input_json_delta"}, {"partial_json", p.call.arguments}});
        out += close_block();
        continue;
      }
      const bool text = p.kind == ReplyPiece::Kind::Content;
      if (open_ != (text ? Open::Text : Open::Thinking)) {
        out += close_block();
        out += open_block(text ? Json{{"type", "text"}, {"text", ""}} : Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
        open_ = text ? Open::Text : Open::Thinking;
      }
      out += delta(text ? Json{{"type", "text_delta"}, {"text", p.text}} : Json{{"type", "thinking_delta"}, {"thinking", p.text}});
    }
    return out;
  }

  std::string stream_end(const StreamResult& result) override {
    std::string out = close_block();
    if (blocks_ == 0) {  // an empty reply still has its text block
      out += open_block(Json{{"type", "text"}, {"text", ""}});
      out += close_block();
    }
    out += event("message_delta", Json{{"delta", Json{{"stop_reason", stop_reason(result, made_calls_)}, {"stop_sequence", nullptr}}},
                                       {"usage", usage(result, true)}});
    return out + event("message_stop", Json::object());
  }

  std::string stream_error(const ApiError& e) override { return sse_event(anthropic_error_body(e), "error"); }

 private:
  enum class Open { None, Text, Thinking, Other };

  Json message(const Json& content) const {
    return Json{{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_}, {"content", content},
                {"stop_reason", nullptr}, {"stop_sequence", nullptr}};
  }

  std::string event(const char* type, const Json& fields) {
    Json j{{"type", type}};
    for (const auto& [k, v] : fields.items()) j[k] = v;
    return sse_event(dump(j), type);
  }

  std::string open_block(const Json& block) {
    open_ = Open::Other;
    return event("content_block_start", Json{{"index", blocks_}, {"content_block", block}});
  }
  std::string delta(const Json& d) { return event("content_block_delta", Json{{"index", blocks_}, {"delta", d}}); }
  std::string close_block() {
    if (open_ == Open::None) return {};
    open_ = Open::None;
    return event("content_block_stop", Json{{"index", blocks_++}});
  }

  std::string model_, id_;
  Open open_ = Open::None;
  int blocks_ = 0;  // closed so far: the open block's index
  bool made_calls_ = false;
};

}  // namespace

std::unique_ptr<ReplyWriter> messages_writer(const std::string& model) { return std::make_unique<MessagesWriter>(model); }

std::string anthropic_error_body(const ApiError& e) {
  const char* type = e.status == 401 ? "authentication_error" : e.status == 404 ? "not_found_error"
                   : e.status == 413 ? "request_too_large" : e.status >= 500 ? "api_error" : "invalid_request_error";
  return dump(Json{{"type", "error"}, {"error", Json{{"type", e.status == 503 ? "overloaded_error" : type}, {"message", e.what()}}}});
}

}  // namespace ember::server
