// One completion over HTTP (cpp-httplib, a connection per request as vLLM's client makes
// them): POST the body, feed the response to a StreamRecorder as it arrives.
#pragma once
#include <string>

#include "loadgen/stream_recorder.h"

namespace ember::loadgen {

struct Target {
  std::string origin;   // "http://host:port"
  std::string path;     // the URL's own path (if any) + the endpoint
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
};

// `url` is "http://host[:port][/prefix]"; throws Error(InvalidArgument) for anything else
// (https is not built in).
Target make_target(const std::string& url, const std::string& endpoint, const std::string& api_key);

struct Exchange {
  bool streamed = true;  // the body asks for a stream (else one whole JSON answer)
  std::string session;   // sent as X-Session-ID when not empty
};

// A request that has not completed `timeout_s` after it was sent fails (Transport).
RequestResult post_completion(const Target& target, const std::string& body, double timeout_s, const Exchange& how = {});

}  // namespace ember::loadgen
