// Helpers of the `ember serve` tests: the server as a child process on a free loopback
// port, HTTP through cpp-httplib, server-sent events split into their JSON payloads, and a
// raw socket for clients that walk away mid-stream.
#pragma once
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <regex>
#include <thread>

#include "cli_test_util.h"
#include "util/json.h"

namespace ember::test {

class ServerProcess {
 public:
  // `args` follow "serve --port 0"; waits until /health says 200.
  explicit ServerProcess(const std::vector<std::string>& args) : dir_("serve") {
    log_ = dir_.file("serve.log");
    pid_ = ::fork();
    if (pid_ == 0) {
      const int err = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(err, 1), ::dup2(err, 2);
      std::vector<std::string> all{EMBER_BINARY, "serve", "--port", "0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(EMBER_BINARY, argv.data());
      ::_exit(127);
    }
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 3000 && port_ == 0; ++i) {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, listening)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE_MESSAGE(port_ != 0, log());
    for (int i = 0; i < 3000; ++i) {
      if (auto r = client().Get("/health"); r && r->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL("the server never became ready: " << log());
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    return c;
  }
  std::string log() const { return slurp(log_); }
  // SIGTERM, then the exit code (-1 when it does not exit within 60 s).
  int terminate() {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 3000; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return decode_wait_status(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  TempDir dir_;
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

inline httplib::Result post(const ServerProcess& s, const std::string& path, const std::string& body,
                            const httplib::Headers& headers = {}) {
  return s.client().Post(path.c_str(), headers, body, "application/json");
}

// The JSON payloads of a server-sent event stream, in order; "[DONE]" stays a string.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

// One value of a Prometheus text body (first sample whose line starts with `series`).
inline double metric(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  FAIL("no metric " << series);
  return -1;
}

// A client that sends `body`, reads until the first event arrives, and hangs up.
inline void stream_and_hang_up(int port, const std::string& path, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[4096];
  while (got.find("data: ") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    got.append(buf, n);
  }
  ::close(fd);
}

}  // namespace ember::test
