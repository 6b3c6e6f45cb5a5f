// An error answer in OpenAI's shape: {"error": {"message", "type", "param", "code"}} with
// its HTTP status. Handlers throw it; the HTTP layer writes it.
#pragma once
#include <stdexcept>
#include <string>

namespace ember::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(std::move(message)), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type;   // invalid_request_error, authentication_error, server_error ...
  std::string param;  // the request field at fault, or ""
  std::string code;   // e.g. context_length_exceeded, or ""
};

// A 400 invalid_request_error whose param is the field the message names ("field 'x' ...",
// "messages[3] ...").
ApiError bad_request(const std::string& message);

// The JSON body of an error.
std::string error_body(const ApiError& e);

}  // namespace ember::server
