#include "loadgen/sse.h"

#include <nlohmann/json.hpp>

namespace ember::loadgen {

void SseParser::feed(std::string_view bytes) {
  partial_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view text(partial_.data() + start, nl - start);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    line(text);
  }
  partial_.erase(0, start);
}

void SseParser::finish() {
  if (!partial_.empty()) line(partial_);
  partial_.clear();
  dispatch();
}

void SseParser::line(std::string_view text) {
  if (text.empty()) return dispatch();
  // Only `data` matters here; comments (":...") and other fields (event, id) are skipped.
  if (text.substr(0, 5) != "data:") return;
  text.remove_prefix(5);
  if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(text);
  has_data_ = true;
}

void SseParser::dispatch() {
  if (!has_data_) return;
  const std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  on_data_(data);
}

namespace {

int usage_count(const nlohmann::json& usage, const char* key) {
  const auto it = usage.find(key);
  return it != usage.end() && it->is_number_integer() ? it->get<int>() : -1;
}

// choices[0].text (completions), .delta.content (chat chunks) or .message.content (a whole
// chat answer); "" when absent or null.
std::string choice_text(const nlohmann::json& chunk) {
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return {};
  const nlohmann::json& c = (*choices)[0];
  if (const auto t = c.find("text"); t != c.end() && t->is_string()) return t->get<std::string>();
  for (const char* key : {"delta", "message"})  // a chunk's delta, a whole answer's message
    if (const auto d = c.find(key); d != c.end() && d->is_object())
      if (const auto t = d->find("content"); t != d->end() && t->is_string()) return t->get<std::string>();
  return {};
}

}  // namespace

StreamChunk parse_chunk(const std::string& data) {
  StreamChunk out;
  if (data == "[DONE]") {
    out.done = true;
    return out;
  }
  const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!chunk.is_object()) {
    out.error = "chunk is not a JSON object: " + data.substr(0, 200);
    return out;
  }
  if (const auto e = chunk.find("error"); e != chunk.end() && !e->is_null()) {
    out.error = "server error in stream: " + e->dump().substr(0, 200);
    return out;
  }
  out.text = choice_text(chunk);
  if (const auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
    out.prompt_tokens = usage_count(*u, "prompt_tokens");
    out.completion_tokens = usage_count(*u, "completion_tokens");
  }
  return out;
}

}  // namespace ember::loadgen
