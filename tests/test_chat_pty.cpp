// `ember chat` driven through a pseudo-terminal, as a person would use it: Ctrl-C stops a
// reply and the next question is answered, a bracketed paste arrives as one message,
// history recall, /exit and Ctrl-D end with status 0. And the script mode (stdin not a
// terminal). The model is aidreams260K (no chat template of its own: --chat-template chatml).
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>

#include "cli_test_util.h"

using namespace ember::test;

namespace {

// Control bytes made readable for failure messages.
std::string visible(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n\n";
    else if (c < 0x20 || c == 0x7f) out += "^" + std::string(1, static_cast<char>(c ^ 0x40));
    else out += static_cast<char>(c);
  }
  return out.size() > 3000 ? "..." + out.substr(out.size() - 3000) : out;
}

constexpr const char* kPrompt = "\x1b[J> ";  // the editor redraws its prompt after clearing

class PtyChat {
 public:
  explicit PtyChat(const std::vector<std::string>& extra_args, bool no_color = true) {
    const std::string model = aidreams_gguf();
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 100;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &ws);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      if (no_color) ::setenv("NO_COLOR", "1", 1);
      else ::unsetenv("NO_COLOR");
      ::setenv("TERM", "xterm", 1);
      std::vector<std::string> args = {EMBER_BINARY, "chat", "-m", model, "--chat-template", "chatml", "-c", "256", "-t", "1"};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(EMBER_BINARY, argv.data());
      ::_exit(127);
    }
  }
  ~PtyChat() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }

  // Types a one-line message and Enter, and waits until the editor has taken it.
  bool submit(const std::string& line) {
    send(line + "\r");
    return expect(line + "\r\n");
  }

  void send(const std::string& bytes) { REQUIRE(::write(master_, bytes.data(), bytes.size()) == (ssize_t)bytes.size()); }

  // Reads until `needle` appears after the mark (then moves the mark past it), or fails
  // after the timeout.
  bool expect(const std::string& needle, double timeout_s = 20.0) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
    for (;;) {
      const size_t at = output_.find(needle, mark_);
      if (at != std::string::npos) {
        mark_ = at + needle.size();
        return true;
      }
      if (!read_some(deadline)) {
        MESSAGE("waited for '", visible(needle), "'; the terminal shows after the mark:\n", visible(output_.substr(mark_)));
        return false;
      }
    }
  }

  // Reads until at least n more bytes arrived after the mark.
  bool expect_bytes(size_t n, double timeout_s = 20.0) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
    while (output_.size() < mark_ + n)
      if (!read_some(deadline)) return false;
    mark_ = output_.size();
    return true;
  }

  // Output between two marks, for checks on one command's output.
  size_t mark() const { return mark_; }
  std::string since(size_t from) const { return output_.substr(from, mark_ - from); }
  const std::string& output() const { return output_; }

  int wait_exit(double timeout_s = 20.0) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return decode_wait_status(status);
      }
      read_some(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n <= 0) return false;  // EIO: the child closed the terminal
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  bool exited_ = false;
  std::string output_;
  size_t mark_ = 0;
};

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("chat in a terminal: Ctrl-C, next question, paste, history, /exit") {
  // Replies never end by themselves (no limit, EOS ignored, context shifts), so Ctrl-C
  // surely lands mid-reply.
  PtyChat chat({"-n", "-1", "--ignore-eos", "--context-shift", "-s", "7"});
  REQUIRE(chat.expect("/help for commands"));
  REQUIRE(chat.expect(kPrompt));

  REQUIRE(chat.submit("tell me a story"));
  REQUIRE(chat.expect_bytes(3000));  // the reply streams, well past the 256-token context
  chat.send("\x03");
  REQUIRE(chat.expect("[interrupted]"));
  REQUIRE(chat.expect(kPrompt));
  CHECK(chat.output().find("dropped during the reply by the context shift") != std::string::npos);

  // The partial reply is kept as the assistant's message.
  REQUIRE(chat.submit("/show"));
  size_t from = chat.mark();
  REQUIRE(chat.expect(kPrompt));
  CHECK(chat.since(from).find("[user] tell me a story\r\n[assistant] ") != std::string::npos);

  // The next question is answered and its reply ends normally (a limit of 12 tokens). The
  // long exchange no longer fits beside it, so it is dropped, and the user is told.
  REQUIRE(chat.submit("/set n 12"));
  REQUIRE(chat.expect("(n = 12)"));
  REQUIRE(chat.expect(kPrompt));
  REQUIRE(chat.submit("and then?"));
  from = chat.mark();
  REQUIRE(chat.expect("12 tokens,"));  // the status line after a finished reply
  REQUIRE(chat.expect(kPrompt));
  CHECK(chat.since(from).find("[interrupted]") == std::string::npos);
  CHECK(chat.since(from).find("(context full: dropped the 2 oldest messages to make room)") != std::string::npos);

  // A bracketed paste with a newline is one message: one reply, one user entry in /show.
  chat.send("\x1b[200~first line\nsecond line\x1b[201~");
  chat.send("\r");
  from = chat.mark();
  REQUIRE(chat.expect("12 tokens,"));
  REQUIRE(chat.expect(kPrompt));
  CHECK(count(chat.since(from), "tokens, ") == 1);

  // History: Up recalls the last message.
  REQUIRE(chat.submit("/stats"));
  REQUIRE(chat.expect("messages;"));
  REQUIRE(chat.expect(kPrompt));
  chat.send("\x1b[A");
  REQUIRE(chat.expect("> /stats"));
  chat.send("\x15");  // Ctrl-U clears the recalled line
  REQUIRE(chat.submit("/show"));
  from = chat.mark();
  REQUIRE(chat.expect(kPrompt));
  const std::string shown = chat.since(from);
  INFO("/show printed: ", shown);
  CHECK(count(shown, "[user] ") == 2);
  CHECK(count(shown, "[assistant] ") == 2);
  CHECK(shown.find("[user] and then?") != std::string::npos);
  CHECK(shown.find("[user] first line\r\nsecond line") != std::string::npos);

  REQUIRE(chat.submit("/exit"));
  CHECK(chat.wait_exit() == 0);
}

TEST_CASE("chat in a terminal: Ctrl-C at the prompt clears the line, Ctrl-D quits with 0") {
  PtyChat chat({"-n", "4"});
  REQUIRE(chat.expect(kPrompt));
  chat.send("half a thought");
  chat.send("\x03");
  REQUIRE(chat.expect("(Ctrl-D or /exit to quit)"));
  REQUIRE(chat.expect(kPrompt));
  chat.send("line one \\\r");  // trailing backslash: continue on the next line
  REQUIRE(chat.expect(". "));
  chat.send("line two\r");
  REQUIRE(chat.expect("4 tokens,"));
  REQUIRE(chat.expect(kPrompt));
  REQUIRE(chat.submit("/show"));
  REQUIRE(chat.expect("[user] line one \r\nline two"));
  REQUIRE(chat.expect(kPrompt));
  chat.send("\x04");
  CHECK(chat.wait_exit() == 0);
  CHECK(chat.output().find("\x1b[1;32m") == std::string::npos);  // NO_COLOR: no colours
  CHECK(chat.output().find("\x1b[36m") == std::string::npos);
}

TEST_CASE("chat in a terminal without NO_COLOR uses colours") {
  PtyChat chat({"-n", "2"}, /*no_color=*/false);
  REQUIRE(chat.expect("\x1b[1;32m> "));  // the prompt
  REQUIRE(chat.submit("/exit"));
  CHECK(chat.wait_exit() == 0);
  CHECK(chat.output().find("\x1b[36m/help for commands") != std::string::npos);
}

TEST_CASE("chat with stdin not a terminal answers each line, replies only on stdout") {
  const ProcessResult r = run_ember({"chat", "-t", "1", "-m", aidreams_gguf(), "--chat-template", "chatml", "-n", "6", "--temp", "0",
                                     "-c", "256"},
                                    "hello\nhow are you \\\nfriend\n/show\n/exit\n");
  INFO("stderr: ", r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("> ") == std::string::npos);  // no prompt, no banner
  CHECK(r.out.find("\x1b[") == std::string::npos);  // no escapes
  CHECK(count(r.out, "[user] ") == 2);
  CHECK(r.out.find("[user] how are you \nfriend") != std::string::npos);
  CHECK(count(r.out, "[assistant] ") == 2);
}

TEST_CASE("chat: a message too long for the context is refused, the chat goes on") {
  std::string big;
  for (int i = 0; i < 60; ++i) big += "the sea and the moon ";
  const ProcessResult r = run_ember({"chat", "-t", "1", "-m", aidreams_gguf(), "--chat-template", "chatml", "-n", "4", "-c", "64"},
                                    big + "\nhi\n/show\n");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("context holds 64") != std::string::npos);
  CHECK(count(r.out, "[user] ") == 1);
  CHECK(r.out.find("[user] hi") != std::string::npos);
}
