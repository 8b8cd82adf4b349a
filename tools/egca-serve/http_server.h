// egca-serve's HTTP/1.1 front: Boost.Beast on one I/O thread, the request handlers on a
// thread pool. It replaces cpp-httplib 0.11, whose thread-per-connection model let 40 slow
// or 200 idle clients hold every thread (/healthz timed out) and whose --max-body bound only
// Content-Length bodies.
//
//   HttpServer server(options);
//   server.Route("GET", "/healthz", health, /*fast=*/true);   // answered on the I/O thread
//   server.Route("POST", "/route", route);                     // answered on the pool
//   auto port = server.Bind();  server.Run();                   // Stop() from another thread
//
// What a client can hold, and for how long:
//   - a connection is a socket and a buffer, never a thread: the I/O thread multiplexes them
//     all; past max_connections, a new connection closes the one that has waited longest
//     for its request header (idle or slow), or is refused with 503 if none is waiting;
//   - the request line and headers must arrive within header_timeout of the connection
//     starting to wait for them (a kept-alive connection's idle time included) and fit in
//     max_header bytes (431); the body must arrive within body_timeout;
//   - a body may hold max_body bytes whatever its framing (Content-Length or chunked: the
//     parser counts the bytes it decodes; 413), and all bodies being read or handled at once
//     hold at most body_budget bytes (a body reserves its Content-Length, a chunked body
//     max_body, when its header arrives; past the budget: 503, retry);
//   - duplicate Content-Length fields, a Content-Length list, Content-Length with chunked,
//     and any Transfer-Encoding but "chunked" are refused (400): a front proxy could frame
//     them differently (request smuggling);
//   - a response must be taken within write_timeout.
// Fast routes (health, metrics) never wait for the pool, so they answer while every
// handler thread is busy. Timed-out or refused connections are closed (after a one-line
// JSON error where the request could still be answered).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "egca/core/status.h"

namespace egca::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::string body;
  std::chrono::steady_clock::time_point received;  // when the header was complete
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra fields ("Allow", ...)
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                        // 0: any free port (Bind returns it)
  size_t max_body = 64 << 20;          // bytes of one request body (413)
  size_t max_header = 64 << 10;        // bytes of the request line and headers (431)
  size_t body_budget = 256 << 20;      // bytes of all bodies held at once (503)
  size_t max_connections = 1024;       // open connections
  int handler_threads = 32;            // request handlers running at once
  double header_timeout = 10;          // seconds (idle keep-alive time included)
  double body_timeout = 60;            // seconds, from the end of the header
  double write_timeout = 30;           // seconds to write one response
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Per request: the request (body may be empty for refused ones), the status sent, seconds
// from the end of the header to the response being queued for writing.
using HttpLogger = std::function<void(const HttpRequest&, int status, double seconds)>;

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // A handler for (method, path). Fast handlers run on the I/O thread and must not block;
  // the others run on the pool. Requests no route takes go to the fallback (404/405).
  // Call before Run().
  void Route(std::string method, std::string path, HttpHandler handler, bool fast = false);
  void SetFallback(HttpHandler handler);
  void SetLogger(HttpLogger logger);

  // Binds and listens; returns the port. Errors: UNAVAILABLE naming host and port.
  StatusOr<int> Bind();
  // Serves until Stop(); then closes every connection and joins the pool.
  void Run();
  // Thread-safe; Run() returns soon after.
  void Stop();

  // Connections open now (for tests and metrics).
  size_t open_connections() const;

  class Impl;  // the I/O context, the pool, the sessions' shared state (http_server.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace egca::serve
