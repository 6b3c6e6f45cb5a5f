// The response object of the Responses API and its event stream (responses_api.h).
#include <chrono>

#include "server/responses_api.h"

namespace ember::server {
namespace {

using Json = json::Value;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json echoed(const Json& request, const char* key, Json fallback) {
  const Json* v = json::find(request, key);
  return v && !v->is_null() ? *v : fallback;
}

Json message_item(const std::string& id, const std::string& text, const char* status) {
  Json content = Json::array();
  if (std::string(status) == "completed")
    content.push_back(Json{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}});
  return Json{{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

Json reasoning_item(const std::string& id, const std::string& text) {
  Json content = Json::array();
  if (!text.empty()) content.push_back(Json{{"type", "reasoning_text"}, {"text", text}});
  return Json{{"id", id}, {"type", "reasoning"}, {"summary", Json::array()}, {"content", content}};
}

Json call_item(const std::string& id, const ToolCall& c, const char* status, bool with_arguments) {
  return Json{{"id", id}, {"type", "function_call"}, {"status", status}, {"call_id", c.id}, {"name", c.name},
              {"arguments", with_arguments ? c.arguments : ""}};
}

Json usage(const StreamResult& r) {
  return Json{{"input_tokens", r.prompt_tokens},
              {"input_tokens_details", Json{{"cached_tokens", r.cached_tokens}}},
              {"output_tokens", r.completion_tokens},
              {"output_tokens_details", Json{{"reasoning_tokens", 0}}},
              {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

class ResponsesWriter final : public ReplyWriter {
 public:
  explicit ResponsesWriter(const ResponsesEcho& echo)
      : echo_(echo), id_(random_id("resp_")),
        created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()) {}

  std::string whole(const ParsedReply& reply, const std::vector<TokenLogprobs>&, const StreamResult& result) override {
    Json output = Json::array();
    if (!reply.reasoning.empty()) output.push_back(reasoning_item(random_id("rs_"), reply.reasoning));
    if (!reply.content.empty() || reply.tool_calls.empty()) output.push_back(message_item(random_id("msg_"), reply.content, "completed"));
    for (const ToolCall& c : reply.tool_calls) output.push_back(call_item(random_id("fc_"), c, "completed", true));
    return dump(response(result.finish_reason == "length" ? "incomplete" : "completed", output, usage(result)));
  }

  std::string stream_start() override {
    const Json r = response("in_progress", Json::array(), nullptr);
    std::string out = event("response.created", Json{{"response", r}});  // events in order: each takes the next number
    return out + event("response.in_progress", Json{{"response", r}});
  }

  std::string stream_pieces(const ReplyPieces& pieces, const std::vector<TokenLogprobs>&) override {
    std::string out;
    for (const ReplyPiece& p : pieces) {
      if (p.kind == ReplyPiece::Kind::ToolCall) {
        out += close_open();
        out += call_events(p.call);
        continue;
      }
      const Open want = p.kind == ReplyPiece::Kind::Content ? Open::Message : Open::Reasoning;
      if (open_ != want) {
        out += close_open();
        out += open_item(want);
      }
      open_text_ += p.text;
      const Json delta{{"item_id", open_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"delta", p.text}};
      out += event(want == Open::Message ? "response.output_text.delta" : "response.reasoning_text.delta", delta);
    }
    return out;
  }

  std::string stream_end(const StreamResult& result) override {
    std::string out = close_open();
    if (output_.empty()) {
      out += open_item(Open::Message);
      out += close_open();
    }
    const bool cut = result.finish_reason == "length";
    return out + event(cut ? "response.incomplete" : "response.completed",
                       Json{{"response", response(cut ? "incomplete" : "completed", output_, usage(result))}});
  }

  std::string stream_error(const ApiError& e) override {
    return event("error", Json{{"code", e.code.empty() ? Json(nullptr) : Json(e.code)}, {"message", e.what()}, {"param", nullptr}});
  }

 private:
  enum class Open { None, Message, Reasoning };

  // One event: its type first, its fields, then its place in the stream.
  std::string event(const char* type, const Json& fields) {
    Json j{{"type", type}};
    for (const auto& [k, v] : fields.items()) j[k] = v;
    j["sequence_number"] = seq_++;
    return sse_event(dump(j), type);
  }

  std::string open_item(Open kind) {
    open_ = kind;
    open_text_.clear();
    const size_t index = output_.size();
    if (kind == Open::Reasoning) {
      open_id_ = random_id("rs_");
      return event("response.output_item.added", Json{{"output_index", index}, {"item", reasoning_item(open_id_, "")}});
    }
    open_id_ = random_id("msg_");
    std::string out = event("response.output_item.added", Json{{"output_index", index}, {"item", message_item(open_id_, "", "in_progress")}});
    return out + event("response.content_part.added",
                       Json{{"item_id", open_id_}, {"output_index", index}, {"content_index", 0},
                            {"part", Json{{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}}}});
  }

  std::string close_open() {
    const size_t index = output_.size();
    std::string out;
    if (open_ == Open::Reasoning) {
      out += event("response.reasoning_text.done", Json{{"item_id", open_id_}, {"output_index", index}, {"content_index", 0}, {"text", open_text_}});
      output_.push_back(reasoning_item(open_id_, open_text_));
    } else if (open_ == Open::Message) {
      const Json ids{{"item_id", open_id_}, {"output_index", index}, {"content_index", 0}};
      Json done = ids;
      done["text"] = open_text_;
      done["logprobs"] = Json::array();
      out += event("response.output_text.done", done);
      Json part = ids;
      part["part"] = Json{{"type", "output_text"}, {"text", open_text_}, {"annotations", Json::array()}};
      out += event("response.content_part.done", part);
      output_.push_back(message_item(open_id_, open_text_, "completed"));
    } else {
      return out;
    }
    open_ = Open::None;
    return out + event("response.output_item.done", Json{{"output_index", index}, {"item", output_.back()}});
  }

  std::string call_events(const ToolCall& c) {
    const size_t index = output_.size();
    const std::string id = random_id("fc_");
    std::string out = event("response.output_item.added", Json{{"output_index", index}, {"item", call_item(id, c, "in_progress", false)}});
    out += event("response.function_call_arguments.delta", Json{{"item_id", id}, {"output_index", index}, {"delta", c.arguments}});
    out += event("response.function_call_arguments.done", Json{{"item_id", id}, {"output_index", index}, {"arguments", c.arguments}});
    output_.push_back(call_item(id, c, "completed", true));
    return out + event("response.output_item.done", Json{{"output_index", index}, {"item", output_.back()}});
  }

  Json response(const char* status, const Json& output, const Json& usage_json) const {
    const Json& req = echo_.request;
    const Json* effort = json::find(req, "reasoning") ? json::find(*json::find(req, "reasoning"), "effort") : nullptr;
    return Json{{"id", id_},
                {"object", "response"},
                {"created_at", created_},
                {"status", status},
                {"error", nullptr},
                {"incomplete_details", std::string(status) == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
                {"instructions", echoed(req, "instructions", nullptr)},
                {"max_output_tokens", echoed(req, "max_output_tokens", nullptr)},
                {"model", echo_.model},
                {"output", output},
                {"parallel_tool_calls", echoed(req, "parallel_tool_calls", true)},
                {"previous_response_id", nullptr},
                {"reasoning", Json{{"effort", effort ? *effort : Json(nullptr)}, {"summary", nullptr}}},
                {"store", false},
                {"temperature", echoed(req, "temperature", 1.0)},
                {"text", Json{{"format", Json{{"type", "text"}}}}},
                {"tool_choice", echoed(req, "tool_choice", "auto")},
                {"tools", echoed(req, "tools", Json::array())},
                {"top_p", echoed(req, "top_p", 1.0)},
                {"truncation", "disabled"},
                {"usage", usage_json},
                {"metadata", echoed(req, "metadata", Json::object())}};
  }

  ResponsesEcho echo_;
  std::string id_;
  int64_t created_;
  int seq_ = 0;
  Json output_ = Json::array();  // finished items
  Open open_ = Open::None;
  std::string open_id_, open_text_;
};

}  // namespace

std::unique_ptr<ReplyWriter> responses_writer(const ResponsesEcho& echo) { return std::make_unique<ResponsesWriter>(echo); }

}  // namespace ember::server
