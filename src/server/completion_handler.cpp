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

void answer_whole(const ServedModel& model, const ApiRequest& r, const std::shared_ptr<ResponseStream>& stream,
                  const ResponseHeader& header, httplib::Response& res) {
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  for (;;) {
    StreamUpdate u = stream->take(std::chrono::hours(1));
    text += u.text;
    logprobs.insert(logprobs.end(), u.logprobs.begin(), u.logprobs.end());
    if (u.finished) break;
  }
  const StreamResult result = stream->result();
  if (ended_by_server(result.finish_reason)) throw unfinished(result.finish_reason);
  res.set_content(response_body(header, text, logprobs, r.completion.top_logprobs >= 0, result, *model.tokenizer),
                  "application/json");
}

void answer_stream(const ServedModel& model, const ApiRequest& r, std::shared_ptr<ResponseStream> stream,
                   const ResponseHeader& header, httplib::Response& res) {
  const bool with_logprobs = r.completion.top_logprobs >= 0;
  const bool usage = r.include_usage;
  ServingEngine* engine = model.engine;
  const Tokenizer* tok = model.tokenizer;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
    auto send = [&](const std::string& event) {
      if (sink.write(event.data(), event.size())) return true;
      engine->cancel(stream);  // the client went away: free its sequence
      return false;
    };
    bool first = true;
    for (;;) {
      StreamUpdate u = stream->take(kHeartbeat);
      if (!u.text.empty() || !u.logprobs.empty() || (first && header.endpoint == Endpoint::ChatCompletions)) {
        if (!send(chunk_event(header, u.text, u.logprobs, with_logprobs, "", first, *tok))) return false;
        first = false;
      } else if (!u.finished && !send(": keep-alive\n\n")) {
        return false;
      }
      if (u.finished) break;
    }
    const StreamResult result = stream->result();
    if (ended_by_server(result.finish_reason)) {
      send(error_event(error_body(unfinished(result.finish_reason))));
    } else {
      if (!send(chunk_event(header, "", {}, false, result.finish_reason, false, *tok))) return false;
      if (usage && !send(usage_event(header, result))) return false;
    }
    if (!send(kDoneEvent)) return false;
    sink.done();
    return true;
  });
}

}  // namespace

void handle_completion(const ServedModel& model, Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point arrival = Clock::now();
  const ApiRequest r = read_api_request(req.body, endpoint, model.api);
  std::shared_ptr<ResponseStream> stream = queue(model, r, arrival);
  const ResponseHeader header = make_header(endpoint, model.api.model_name);
  if (r.stream) answer_stream(model, r, std::move(stream), header, res);
  else answer_whole(model, r, stream, header, res);
}

}  // namespace ember::server
