// libFuzzer entry: raw bytes as a client sends them, through the endpoint's request path as the
// transport runs it: the bytes arrive in reads of a size the input picks, each read goes to
// read_request_head() as on a connection, and a whole head goes to the daemon's own route
// table (app/endpoint_routes.cpp) with basic auth on and off, from this host and from
// elsewhere. What must hold, beside no crash, leak or sanitizer report: every answer is one
// well-formed response whose Content-Length is its body's; a /debug/ page is never reached
// from elsewhere without credentials; a wrong password never reaches any page.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "app/endpoint_routes.h"
#include "endpoint/basic_auth.h"
#include "endpoint/routes.h"
#include "endpoint/web_config.h"
#include "server/http_message.h"

namespace {

using cephscope::HeadRead;

bool debug_reached = false;  // set by the /debug/ sources, read after each answer

// A fresh table per input (its auth gate remembers credentials and failures): each input
// runs alone, as libFuzzer wants it.
cephscope::Routes routes() {
  return cephscope::endpoint_routes({
      .metrics = [] { return std::string("cephscope_up 1\n"); },
      .metrics_protobuf = [] { return std::string("\x05\x0a\x03up", 6); },
      .slow_ops =
          [] {
            debug_reached = true;
            return std::string("{\"ops\": []}\n");
          },
      .slow_op_trace = [](std::string_view trace) -> std::optional<std::string> {
        debug_reached = true;
        if (trace.size() != 32) {
          __builtin_trap();  // the route passes only a checked trace id
        }
        return std::string("{\"parts\": []}\n");
      },
      .osd_detail =
          [](const std::string&, const std::string&) {
            debug_reached = true;
            return std::pair<int, std::string>{200, "ok\n"};
          },
      .ready = nullptr,
  });
}

// alice:s3cret, bcrypt at its lowest cost so that a run checks many passwords
const cephscope::WebConfig& with_auth() {
  static const cephscope::WebConfig web{
      .tls = nullptr,
      .auth = cephscope::BasicAuth(
          {{"alice", "$2y$04$69nf59DKM2I7CYHMbz8Ste6ViOCGL/v0QXPL49aiWOZv1WpSQNV8O"}}),
      .source = "fuzz"};
  return web;
}

// One response: a status line, headers up to a blank line, and as many body bytes as its
// Content-Length (a HEAD response announces the length and sends none).
void check_response(std::string_view wire, bool head_only) {
  if (!wire.starts_with("HTTP/1.1 ")) {
    std::abort();
  }
  const auto end = wire.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    std::abort();
  }
  const std::string_view headers = wire.substr(0, end);
  const auto at = headers.find("\r\nContent-Length: ");
  if (at == std::string_view::npos) {
    std::abort();
  }
  const std::size_t length = std::strtoull(headers.data() + at + 18, nullptr, 10);
  const std::size_t body = wire.size() - end - 4;
  if (head_only ? body != 0 : body != length) {
    std::abort();
  }
}

void answer(const cephscope::HttpRequest& request) {
  static const cephscope::WebConfig open{};
  const cephscope::Routes table = routes();
  for (const bool loopback : {true, false}) {
    for (const cephscope::WebConfig* web : {&open, &with_auth()}) {
      debug_reached = false;
      const cephscope::Peer peer{.address = loopback ? "127.0.0.1" : "192.0.2.1",
                                 .loopback = loopback};
      const std::string wire = table.answer(request, *web, peer);
      check_response(wire, request.method == "HEAD");
      const bool authenticated = web->auth.enabled() && wire.starts_with("HTTP/1.1 2");
      if (debug_reached && !loopback && !authenticated) {
        std::abort();  // a /debug/ page answered to a stranger
      }
      // alice:s3cret is 12 bytes: one base64 spelling, YWxpY2U6czNjcmV0
      if (authenticated && request.header("authorization").value_or("").find("YWxpY2U6czNjcmV0") ==
                               std::string_view::npos) {
        std::abort();  // let in without alice's password
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  // The first byte picks the size of each read (1 to 256 bytes), as a slow or fast client.
  const std::size_t chunk = static_cast<std::size_t>(data[0]) + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string in;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    in.append(bytes.substr(at, chunk));
    HeadRead head = cephscope::read_request_head(in);
    if (head.kind == HeadRead::Kind::kIncomplete) {
      continue;
    }
    if (head.kind == HeadRead::Kind::kComplete) {
      answer(head.request);
    }
    break;  // one request per connection: the transport answers and closes
  }
  return 0;
}
