// `ember serve`'s HTTP side (cpp-httplib): routes, authentication, limits, and the
// translation between OpenAI requests and the serving engine. It listens before the model
// is loaded (GET /health says 503 "loading" until attach()), so a supervisor can watch it.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "server/drain.h"
#include "server/metrics.h"
#include "server/served_model.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace ember::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (the chosen one is returned by bind)
  std::string api_key;                 // empty: no authentication; else Bearer or x-api-key
  // Origins browsers may call from (CORS): "*" for any (the Origin is reflected); empty: no
  // CORS headers and no preflight answers.
  std::vector<std::string> cors_origins;
  size_t max_body_bytes = 4u << 20;    // 413 beyond
  int max_connections = 128;           // served at once; more wait in the kernel's backlog
  int read_timeout_s = 30;             // a client that stops sending its request
  bool metrics_no_auth = false;        // GET /metrics without the API key (scrapers, endpoint pickers)
  bool metrics_vllm_names = false;     // /metrics also under vLLM's names (metrics_routing.h)
};

class HttpServer {
 public:
  HttpServer(const ServerOptions& options, ServerMetrics& metrics);
  ~HttpServer();

  int bind();      // throws Error(Io) naming the address; returns the port
  void listen();   // blocks until stop()
  void attach(const ServedModel& model);  // from now on requests reach the engine
  void start_draining();                  // new generation requests get 503, /health 503
  // After the engine finished its sequences: waits until every answer is written (drain.h).
  bool wait_for_responses(std::chrono::milliseconds timeout);
  void stop();  // ends listen(), whether it has started yet or not (it must be on its way)

 private:
  void routes();
  void install_hooks();
  bool authorized(const httplib::Request& req) const;
  bool cors(const httplib::Request& req, httplib::Response& res) const;  // true: a preflight, answered

  ServerOptions opts_;
  ServerMetrics& metrics_;
  std::unique_ptr<httplib::Server> http_;
  ServedModel model_;
  std::atomic<bool> ready_{false}, draining_{false}, listen_returned_{false};
  InFlightRequests in_flight_;
};

}  // namespace ember::server
