#include "server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <thread>

#include "server/agent_handlers.h"
#include "server/api_error.h"
#include "server/auth.h"
#include "server/completion_handler.h"
#include "server/metrics_routing.h"
#include "server/openapi_document.h"
#include "util/error.h"
#include "util/json.h"

namespace ember::server {
namespace {

using Json = nlohmann::ordered_json;

// httplib's thread pool queues every accepted connection without bound; this one lets
// max_connections be served at once and makes the accept loop wait for a free worker.
class ConnectionLimiter : public httplib::TaskQueue {
 public:
  explicit ConnectionLimiter(int n) : pool_(n), free_(n) {}
  void enqueue(std::function<void()> fn) override {
    free_.acquire();
    pool_.enqueue([this, fn = std::move(fn)] {
      fn();
      free_.release();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
  std::counting_semaphore<> free_;
};

void send_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

// llama-server's /tokenize: {"content", "add_special", "parse_special"} -> {"tokens"}.
Json tokenize(const Tokenizer& tok, const json::Value& body) {
  const json::Value* content = json::find(body, "content");
  if (!content || !content->is_string()) throw bad_request("field 'content' must be a string");
  const auto ids = tok.encode(json::as_string(*content), bool_field(body, "add_special", false), bool_field(body, "parse_special", true));
  return Json{{"tokens", ids}};
}

Json detokenize(const Tokenizer& tok, const json::Value& body) {
  const json::Value* tokens = json::find(body, "tokens");
  if (!tokens || !tokens->is_array()) throw bad_request("field 'tokens' must be an array of token ids");
  std::vector<int32_t> ids;
  for (const json::Value& t : json::as_array(*tokens)) {
    if (!t.is_number_integer() || json::as_int(t) < 0 || json::as_int(t) >= tok.n_vocab())
      throw bad_request(fmt::format("field 'tokens': every id must be an integer in [0, {})", tok.n_vocab()));
    ids.push_back(static_cast<int32_t>(json::as_int(t)));
  }
  return Json{{"content", tok.decode(ids)}};
}

}  // namespace

HttpServer::HttpServer(const ServerOptions& options, ServerMetrics& metrics)
    : opts_(options), metrics_(metrics), http_(std::make_unique<httplib::Server>()) {
  const int n = std::max(1, opts_.max_connections);
  http_->new_task_queue = [n] { return new ConnectionLimiter(n); };
  // httplib's default is SO_REUSEPORT, which lets a second server bind the same port and
  // take half its connections, yet refuses the port while a previous server's connections
  // linger in TIME_WAIT. SO_REUSEADDR is the other way round: what a server wants.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http_->set_payload_max_length(opts_.max_body_bytes);
  http_->set_read_timeout(opts_.read_timeout_s, 0);
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const int port = opts_.port == 0 ? http_->bind_to_any_port(opts_.host) : (http_->bind_to_port(opts_.host, opts_.port) ? opts_.port : -1);
  if (port < 0) fail(ErrorKind::Io, "cannot listen on {}:{} (in use, or not an address of this machine)", opts_.host, opts_.port);
  return port;
}

void HttpServer::listen() {
  http_->listen_after_bind();
  listen_returned_ = true;
}

void HttpServer::attach(const ServedModel& model) {
  model_ = model;
  ready_ = true;
}

void HttpServer::start_draining() { draining_ = true; }

bool HttpServer::wait_for_responses(std::chrono::milliseconds timeout) { return in_flight_.wait_until_none(timeout); }

// httplib's stop() does nothing until the listening thread is in its accept loop: a model
// that fails to load at once would otherwise leave that thread listening forever.
void HttpServer::stop() {
  while (!http_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

// Bearer (OpenAI's clients) or x-api-key (Anthropic's).
bool HttpServer::authorized(const httplib::Request& req) const {
  if (opts_.api_key.empty()) return true;
  if (req.has_header("x-api-key")) return constant_time_equal(req.get_header_value("x-api-key"), opts_.api_key);
  return bearer_matches(req.get_header_value("Authorization"), opts_.api_key);
}

// Access-Control-* headers for an allowed Origin; a preflight (OPTIONS with
// Access-Control-Request-Method) is answered here, before authentication, since browsers
// send no credentials with it.
bool HttpServer::cors(const httplib::Request& req, httplib::Response& res) const {
  if (opts_.cors_origins.empty() || !req.has_header("Origin")) return false;
  const std::string origin = req.get_header_value("Origin");
  const auto& allowed = opts_.cors_origins;
  const bool any = std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
  if (!any && std::find(allowed.begin(), allowed.end(), origin) == allowed.end()) return false;
  res.set_header("Access-Control-Allow-Origin", origin);
  res.set_header("Vary", "Origin");
  if (req.method != "OPTIONS" || !req.has_header("Access-Control-Request-Method")) return false;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type, x-api-key, anthropic-version" : asked);
  res.set_header("Access-Control-Max-Age", "86400");
  res.status = 204;
  return true;
}

// What runs around every route: the key and readiness checks, CORS, errors, the logger.
void HttpServer::install_hooks() {
  httplib::Server& s = *http_;
  // Every answer but /health and the API document (and /metrics under --metrics-no-auth)
  // needs the key; the model must be loaded
  // for everything but /health, /metrics and the document.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    in_flight_.begin(&req);  // ended by the logger, once the answer is written
    if (cors(req, res)) return httplib::Server::HandlerResponse::Handled;
    const bool open = req.path == "/health" || req.path == "/openapi.json" || (opts_.metrics_no_auth && req.path == "/metrics");
    if (!open && !authorized(req)) {
      send_error(res, ApiError(401, "authentication_error", "missing or wrong API key (Authorization: Bearer KEY, or x-api-key: KEY)", "",
                               "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!open && req.path != "/metrics" && !ready_) {
      send_error(res, ApiError(503, "server_error", "the model is still loading", "", "loading"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, "server_error", e.what()));
    }
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_response(res.status);
    in_flight_.end(&req);
  });
  // Errors httplib answers itself (unknown path, body too large, malformed request line).
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 404 ? fmt::format("no route for {} {}", req.method, req.path)
                           : res.status == 413 ? "the request body is too large"
                                               : fmt::format("HTTP {}", res.status);
    send_error(res, ApiError(res.status, "invalid_request_error", what));
  });
}

void HttpServer::routes() {
  install_hooks();
  httplib::Server& s = *http_;
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const char* status = draining_ ? "shutting down" : ready_ ? "ok" : "loading";
    send_json(res, ready_ && !draining_ ? 200 : 503, Json{{"status", status}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const EngineSnapshot engine = ready_ ? model_.engine->snapshot() : EngineSnapshot{};
    std::string body = metrics_.render(engine);
    append_routing_metrics(body, engine, {ready_ ? model_.api.model_name : "", opts_.metrics_vllm_names});
    res.set_content(body, "text/plain; version=0.0.4");
  });
  s.Get("/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(openapi_document()), "application/json");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const Json model{{"id", model_.api.model_name}, {"object", "model"}, {"created", model_.created}, {"owned_by", "ember"}};
    send_json(res, 200, Json{{"object", "list"}, {"data", Json::array({model})}});
  });
  auto completion = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      if (draining_) throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
      handle_completion(model_, endpoint, req, res);
    };
  };
  s.Post("/v1/completions", completion(Endpoint::Completions));
  s.Post("/v1/chat/completions", completion(Endpoint::ChatCompletions));
  auto generation = [this](void (*handler)(const ServedModel&, const httplib::Request&, httplib::Response&)) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (draining_) throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
      handler(model_, req, res);
    };
  };
  s.Post("/v1/responses", generation(handle_responses));
  s.Post("/v1/messages", generation(handle_messages));
  s.Post("/v1/messages/count_tokens", [this](const httplib::Request& req, httplib::Response& res) { handle_count_tokens(model_, req, res); });
  s.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) { handle_apply_template(model_, req, res); });
  s.Get("/props", [this](const httplib::Request&, httplib::Response& res) { handle_props(model_, res); });
  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, tokenize(*model_.tokenizer, read_json_object(req.body)));
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, detokenize(*model_.tokenizer, read_json_object(req.body)));
  });
}

}  // namespace ember::server
