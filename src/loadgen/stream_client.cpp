#include "loadgen/stream_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include "util/error.h"

namespace ember::loadgen {

Target make_target(const std::string& url, const std::string& endpoint, const std::string& api_key) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0 || url.size() == scheme.size())
    fail(ErrorKind::InvalidArgument, "URL {} must look like http://host:port (https is not supported)", url);
  const size_t slash = url.find('/', scheme.size());
  std::string prefix = slash == std::string::npos ? "" : url.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {url.substr(0, slash), prefix + endpoint, api_key};
}

RequestResult post_completion(const Target& target, const std::string& body, double timeout_s, const Exchange& how) {
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  httplib::Client client(target.origin);
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(limit);
  client.set_connection_timeout(usec);
  client.set_read_timeout(usec);
  client.set_write_timeout(usec);

  httplib::Request req;
  req.method = "POST";
  req.path = target.path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", how.streamed ? "text/event-stream" : "application/json");
  if (!how.session.empty()) req.set_header("X-Session-ID", how.session);
  if (!target.api_key.empty()) req.set_header("Authorization", "Bearer " + target.api_key);

  const Clock::time_point sent = Clock::now();
  StreamRecorder recorder(sent, how.streamed);
  req.response_handler = [&](const httplib::Response& res) {
    recorder.on_status(res.status);
    return true;
  };
  // Returning false cancels the transfer: the whole request, not only each read, is bounded.
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const Clock::time_point now = Clock::now();
    if (now - sent > limit) return false;
    recorder.on_body({data, n}, now);
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool sent_ok = client.send(req, res, error);
  const Clock::time_point end = Clock::now();
  std::string transport;
  if (!sent_ok)
    transport = end - sent >= limit ? fmt::format("no complete response within --timeout {} s", timeout_s)
                                    : fmt::format("{} error talking to {}", httplib::to_string(error), target.origin);
  return recorder.finish(end, transport);
}

}  // namespace ember::loadgen
