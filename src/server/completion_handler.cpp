#include "server/completion_handler.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/openai_format.h"
#include "util/error.h"

namespace ember::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kHeartbeat{250};

// The request's tokens, checked against the context and the KV pool (400 with the counts).
SequenceRequest prepare(const ServedModel& model, const ApiRequest& r) {
  SequenceRequest s = sequence_request(r.completion, *model.tokenizer);
  try {
    check_request(s, model.engine->limits());
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::ContextFull || e.kind() == ErrorKind::OutOfMemory)
      throw ApiError(400, "invalid_request_error", e.what(), "max_tokens", "context_length_exceeded");
    throw bad_request(e.what());
  }
  return s;
}

std::shared_ptr<ResponseStream> queue(const ServedModel& model, const ApiRequest& r, Clock::time_point arrival) {
  SequenceRequest s = prepare(model, r);
  auto stream = std::make_shared<ResponseStream>(static_cast<int>(s.prompt.size()));
  switch (model.engine->submit(std::move(s), stream, arrival)) {
    case ServingEngine::Admission::Queued: return stream;
    case ServingEngine::Admission::QueueFull:
      throw ApiError(503, "server_error", "the server's queue is full; retry later", "", "queue_full");
    case ServingEngine::Admission::ShuttingDown:
      throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
  }
  return stream;
}

// A generation that ended without its text (shutdown, a failed step) as an error.
ApiError unfinished(const std::string& reason) {
  return ApiError(503, "server_error", fmt::format("the generation was {} by the server", reason == "error" ? "ended by an error" : "cancelled"),
                  "", reason);
}

bool ended_by_server(const std::string& reason) { return reason == "cancelled" || reason == "error"; }

// The reply's pieces as the request allows them: with parallel_tool_calls false, the
// calls after the first are dropped.
class ReplyReader {
 public:
  explicit ReplyReader(const CompletionRequest& c) : parser_(make_reply_parser(c.reply)), one_call_(!c.parallel_tool_calls) {}
  ReplyPieces push(std::string_view text) { return allowed(parser_->push(text)); }
  ReplyPieces finish() { return allowed(parser_->finish()); }

 private:
  ReplyPieces allowed(ReplyPieces pieces) {
    ReplyPieces out;
    for (ReplyPiece& p : pieces) {
      if (p.kind == ReplyPiece::Kind::ToolCall && one_call_ && calls_++ > 0) continue;
      out.push_back(std::move(p));
    }
    return out;
  }
  std::unique_ptr<ReplyParser> parser_;
  bool one_call_;
  int calls_ = 0;
};

void answer_whole(const ApiRequest& r, const std::shared_ptr<ResponseStream>& stream, ReplyWriter& writer,
                  httplib::Response& res) {
  ReplyReader reader(r.completion);
  ParsedReply reply;
  std::vector<TokenLogprobs> logprobs;
  for (;;) {
    StreamUpdate u = stream->take(std::chrono::hours(1));
    reply.add(reader.push(u.text));
    logprobs.insert(logprobs.end(), u.logprobs.begin(), u.logprobs.end());
    if (u.finished) break;
  }
  reply.add(reader.finish());
  const StreamResult result = stream->result();
  if (ended_by_server(result.finish_reason)) throw unfinished(result.finish_reason);
  res.set_content(writer.whole(reply, logprobs, result), "application/json");
}

void answer_stream(const ServedModel& model, const ApiRequest& r, std::shared_ptr<ResponseStream> stream,
                   std::shared_ptr<ReplyWriter> writer, httplib::Response& res) {
  ServingEngine* engine = model.engine;
  auto reader = std::make_shared<ReplyReader>(r.completion);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
    auto send = [&](const std::string& event) {
      if (event.empty() || sink.write(event.data(), event.size())) return true;
      engine->cancel(stream);  // the client went away: free its sequence
      return false;
    };
    if (!send(writer->stream_start())) return false;
    for (;;) {
      StreamUpdate u = stream->take(kHeartbeat);
      ReplyPieces pieces = reader->push(u.text);
      if (u.finished) {
        ReplyPieces rest = reader->finish();
        pieces.insert(pieces.end(), rest.begin(), rest.end());
      }
      if (!pieces.empty() || !u.logprobs.empty()) {
        if (!send(writer->stream_pieces(pieces, u.logprobs))) return false;
      } else if (!u.finished && !send(": keep-alive\n\n")) {
        return false;
      }
      if (u.finished) break;
    }
    const StreamResult result = stream->result();
    const std::string end = ended_by_server(result.finish_reason) ? writer->stream_error(unfinished(result.finish_reason))
                                                                  : writer->stream_end(result);
    if (!send(end)) return false;
    sink.done();
    return true;
  });
}

}  // namespace

void serve_generation(const ServedModel& model, const ApiRequest& r, std::unique_ptr<ReplyWriter> writer,
                      httplib::Response& res) {
  std::shared_ptr<ResponseStream> stream = queue(model, r, Clock::now());
  if (r.stream) answer_stream(model, r, std::move(stream), std::move(writer), res);
  else answer_whole(r, stream, *writer, res);
}

void handle_completion(const ServedModel& model, Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const ApiRequest r = read_api_request(req.body, endpoint, model.api);
  const OpenAiOptions options{r.completion.top_logprobs >= 0, r.include_usage};
  serve_generation(model, r, openai_writer(make_header(endpoint, model.api.model_name), options, *model.tokenizer), res);
}

}  // namespace ember::server
