// Request heads, content negotiation and gzip: the endpoint's HTTP without a socket.
#include <zlib.h>

#include <catch2/catch.hpp>

#include "endpoint/negotiation.h"
#include "endpoint/routes.h"
#include "server/http_message.h"

using namespace cephscope;

TEST_CASE("request heads parse with CRLF or LF and end at the blank line", "[http]") {
  const std::string head =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept-Encoding:  gzip \r\nX-Empty:\r\n\r\n";
  CHECK(request_head_end(head) == head.size());
  CHECK(request_head_end(head + "body") == head.size());
  CHECK_FALSE(request_head_end("GET / HTTP/1.1\r\nHost: a\r\n"));
  CHECK(request_head_end("\r\nGET / HTTP/1.0\n\n") == 18);
  auto req = parse_request_head(head);
  REQUIRE(req);
  CHECK(req->method == "GET");
  CHECK(req->target == "/metrics?x=1");
  CHECK(req->path == "/metrics");
  CHECK(req->version == "HTTP/1.1");
  CHECK(req->header("accept-encoding") == "gzip");
  CHECK(req->header("x-empty") == "");
  CHECK(req->header("host") == "a");
  CHECK_FALSE(req->header("authorization"));
  auto lf = parse_request_head("HEAD / HTTP/1.0\nAuthorization: Basic eA==\n\n");
  REQUIRE(lf);
  CHECK(lf->method == "HEAD");
  CHECK(lf->header("authorization") == "Basic eA==");
}

TEST_CASE("malformed request heads are refused", "[http]") {
  for (const char* bad :
       {"GET\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
        "GET /a b HTTP/1.1\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", "GET / HTTP/1.1\r\nBad name: x\r\n\r\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_request_head(bad));
  }
  // control and non-ASCII bytes in the target, NUL in a header value
  for (const std::string& bad :
       {std::string("GET /met\0rics HTTP/1.1\r\n\r\n", 26),
        std::string("GET /\xff HTTP/1.1\r\n\r\n"), std::string("GET /a\x7f HTTP/1.1\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26)}) {
    INFO(bad);
    CHECK_FALSE(parse_request_head(bad));
  }
  CHECK(parse_request_head("GET /m%20x?a=%FF HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n"));
}

TEST_CASE("gzip is used when Accept-Encoding admits it", "[http]") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("GZIP"));
  CHECK(accepts_gzip("deflate, gzip;q=0.5"));
  CHECK(accepts_gzip("x-gzip"));
  CHECK(accepts_gzip("*"));
  CHECK(accepts_gzip("br;q=1.0, gzip;q=0.8, *;q=0.1"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  CHECK_FALSE(accepts_gzip("gzip;q=0.000"));
  CHECK_FALSE(accepts_gzip("*, gzip;q=0"));
  CHECK_FALSE(accepts_gzip("gzipped"));
  CHECK_FALSE(accepts_gzip("gzip;q=x"));
  CHECK_FALSE(accepts_gzip("gzip;q=nan"));
  CHECK_FALSE(accepts_gzip("gzip;q=inf"));
}

TEST_CASE("gzip output is a gzip member that inflates to the input", "[http]") {
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text += "cephscope_test_total{i=\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  }
  const auto compressed = gzip_compress(text);
  REQUIRE(compressed.ok());
  const std::string& gz = *compressed;
  REQUIRE(gz.size() > 10);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  CHECK(gz.size() < text.size() / 4);
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  std::string out(text.size() + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  CHECK(out == text);
  const auto empty = gzip_compress("");
  REQUIRE(empty.ok());
  CHECK(!empty->empty());
}

TEST_CASE("a HEAD response has a GET's headers and no body", "[http]") {
  HttpResponse r;
  r.body = "hello\n";
  r.headers.emplace_back("Vary", "Accept-Encoding");
  const std::string get = serialize_response(r, false);
  const std::string head = serialize_response(r, true);
  CHECK(get ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 6\r\n"
        "Vary: Accept-Encoding\r\nConnection: close\r\n\r\nhello\n");
  CHECK(head == get.substr(0, get.size() - 6));
}

namespace {
bool is_protobuf(std::string_view accept) {
  return preferred_exposition(accept) == ExpositionFormat::kProtobuf;
}
}  // namespace

TEST_CASE("protobuf only for a scraper that prefers Prometheus' delimited MetricFamily stream",
          "[http]") {
  // What Prometheus sends with native histograms on, and without.
  CHECK(
      is_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                  "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"));
  CHECK(!is_protobuf(
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
      "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
  CHECK(!is_protobuf(""));
  CHECK(!is_protobuf("*/*"));
  // Another protobuf message, or text encoding of it: not what is served.
  CHECK(!is_protobuf("application/vnd.google.protobuf;proto=other.Message;encoding=delimited"));
  CHECK(!is_protobuf(
      "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"));
  // Asked for, but less than text.
  CHECK(
      !is_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                   "encoding=delimited;q=0.2,text/plain;q=0.9"));
  CHECK(
      !is_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                   "encoding=delimited;q=0"));
}
