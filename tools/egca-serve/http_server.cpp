#include "http_server.h"

#include <fmt/format.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <list>
#include <map>
#include <optional>

namespace egca::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// A reason as a JSON string (reasons are egca's own text and Beast's messages).
std::string ErrorJson(std::string_view reason) {
  std::string out = "{\"error\":\"";
  for (char c : reason) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"}";
}

// The peer went away or a deadline passed: nothing to answer.
bool Gone(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == beast::error::timeout || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == asio::error::eof ||
         ec == asio::error::broken_pipe || ec == asio::error::bad_descriptor;
}

}  // namespace

class Session;

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions o)
      : options(std::move(o)),
        io(std::make_unique<asio::io_context>(1)),
        pool(std::make_unique<asio::thread_pool>(
            static_cast<size_t>(std::max(1, options.handler_threads)))) {}
  ~Impl() {
    // Handlers in flight finish first (they post back to the I/O context); then the
    // acceptor and every session go, while the rest of this object is still alive.
    pool->join();
    acceptor.reset();
    retry.reset();
    stop_timer.reset();
    io.reset();
  }

  void Accept();
  void OnAccept(tcp::socket socket);
  void StopWhenAnswered(Clock::time_point deadline);
  bool Reserve(size_t bytes) {
    if (bytes > options.body_budget - reserved) return false;
    reserved += bytes;
    return true;
  }
  void Release(size_t bytes) { reserved -= bytes; }

  struct RouteEntry {
    HttpHandler handler;
    bool fast = false;
  };

  HttpServerOptions options;
  std::map<std::pair<std::string, std::string>, RouteEntry> routes;
  HttpHandler fallback;
  HttpLogger logger;
  std::unique_ptr<asio::io_context> io;
  std::unique_ptr<asio::thread_pool> pool;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> retry;      // accept again after an error
  std::unique_ptr<asio::steady_timer> stop_timer;  // Stop(): waits for answers in hand
  std::atomic<size_t> open{0};
  // I/O thread only:
  size_t reserved = 0;             // body bytes reserved by the sessions
  size_t answering = 0;            // requests dispatched whose answer is not written yet
  std::list<Session*> waiting;     // sessions waiting for a request header, oldest first
  std::atomic<bool> stopping{false};
};

// One connection: header, framing checks, body, handler, response, and again while the
// connection is kept alive. Lives as long as an operation of its own is pending.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer::Impl& server, tcp::socket socket)
      : server_(server), stream_(std::move(socket)), buffer_(server.options.max_header + 65536) {
    ++server_.open;
  }
  ~Session() {
    DoneAnswering();
    SetWaiting(false);
    ReleaseBody();
    --server_.open;
  }

  void Start() { ReadHeader(); }

  // Closes the connection from outside (eviction): its pending read ends.
  void Evict() {
    SetWaiting(false);
    beast::error_code ec;
    stream_.socket().close(ec);
  }

 private:
  const HttpServerOptions& options() const { return server_.options; }

  void SetWaiting(bool on) {
    if (on == waiting_) return;
    if (on) {
      waiting_it_ = server_.waiting.insert(server_.waiting.end(), this);
    } else {
      server_.waiting.erase(waiting_it_);
    }
    waiting_ = on;
  }

  void ReleaseBody() {
    server_.Release(reserved_);
    reserved_ = 0;
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options().max_header));
    parser_->body_limit(static_cast<std::uint64_t>(options().max_body));
    request_ = HttpRequest{};
    SetWaiting(true);
    stream_.expires_after(Seconds(options().header_timeout));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              self->OnHeader(ec);
                            });
  }

  void OnHeader(beast::error_code ec) {
    SetWaiting(false);
    start_ = Clock::now();
    request_.received = start_;
    if (Gone(ec)) return Close();
    if (ec == http::error::header_limit) {
      return Refuse(431, fmt::format("request header exceeds {} bytes", options().max_header));
    }
    if (ec == http::error::body_limit) return RefuseTooLarge();
    if (ec == http::error::bad_content_length) {
      return Refuse(400,
                    "bad Content-Length (malformed, conflicting, or with Transfer-Encoding)");
    }
    if (ec == http::error::bad_transfer_encoding) {
      return Refuse(400, "bad Transfer-Encoding (repeated, or with Content-Length)");
    }
    if (ec) return Refuse(400, "malformed HTTP request: " + ec.message());
    const auto& req = parser_->get();
    request_.method = std::string(req.method_string());
    std::string_view target(req.target().data(), req.target().size());
    request_.path = std::string(target.substr(0, target.find('?')));
    // Framings a proxy in front might read differently from us are refused outright.
    if (req.count(http::field::content_length) > 1) {
      return Refuse(400, "duplicate Content-Length fields");
    }
    if (auto cl = req.find(http::field::content_length);
        cl != req.end() && cl->value().find(',') != beast::string_view::npos) {
      return Refuse(400, "Content-Length holds a list");
    }
    if (req.count(http::field::transfer_encoding) > 0 && !parser_->chunked()) {
      return Refuse(400, "Transfer-Encoding other than chunked");
    }
    uint64_t need = 0;
    if (parser_->chunked()) {
      need = options().max_body;  // unknown until read: the most it may hold
    } else if (auto length = parser_->content_length()) {
      need = *length;  // <= max_body (the parser checked it)
    }
    if (!server_.Reserve(need)) {
      return Refuse(503, "too many request bodies in flight (server body budget); retry later");
    }
    reserved_ = need;
    if (parser_->is_done()) return Dispatch();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                     req.version());
      stream_.expires_after(Seconds(options().write_timeout));
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    stream_.expires_after(Seconds(options().body_timeout));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnBody(ec);
                     });
  }

  void OnBody(beast::error_code ec) {
    if (ec == http::error::body_limit) return RefuseTooLarge();
    if (Gone(ec)) return Close();
    if (ec) return Refuse(400, "malformed HTTP request body: " + ec.message());
    Dispatch();
  }

  void Dispatch() {
    ++server_.answering;
    answering_ = true;
    http::request<http::string_body> req = parser_->release();
    parser_.reset();
    keep_alive_ = req.keep_alive();
    request_.body = std::move(req.body());
    auto found = server_.routes.find({request_.method, request_.path});
    const HttpHandler* handler = &server_.fallback;
    bool fast = true;  // the fallback answers from routes alone
    if (found != server_.routes.end()) {
      handler = &found->second.handler;
      fast = found->second.fast;
    }
    if (fast) return Respond(Call(*handler, request_));
    asio::post(*server_.pool, [self = shared_from_this(), handler] {
      HttpResponse response = Call(*handler, self->request_);
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response)]() mutable {
                   self->Respond(std::move(response));
                 });
    });
  }

  static HttpResponse Call(const HttpHandler& handler, const HttpRequest& request) {
    try {
      return handler(request);
    } catch (const std::exception& e) {
      return HttpResponse{500, "application/json", ErrorJson(std::string("internal error: ") +
                                                              e.what()),
                          {}};
    } catch (...) {
      return HttpResponse{500, "application/json", ErrorJson("internal error"), {}};
    }
  }

  void RefuseTooLarge() {
    Refuse(413, fmt::format("request body exceeds --max-body {} bytes", options().max_body));
  }

  // An answer to a request whose body was not (wholly) read: the connection closes after it.
  void Refuse(int status, const std::string& reason) {
    keep_alive_ = false;
    closing_ = true;
    Respond(HttpResponse{status, "application/json", ErrorJson(reason), {}});
  }

  void Respond(HttpResponse r) {
    request_.body.clear();
    request_.body.shrink_to_fit();
    ReleaseBody();
    if (server_.logger) {
      std::chrono::duration<double> took = Clock::now() - start_;
      server_.logger(request_, r.status, took.count());
    }
    response_.emplace(static_cast<http::status>(r.status), 11);
    response_->set(http::field::server, "egca-serve");
    response_->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) response_->set(name, value);
    response_->body() = std::move(r.body);
    response_->keep_alive(keep_alive_ && !closing_ && !server_.stopping);
    response_->prepare_payload();
    stream_.expires_after(Seconds(options().write_timeout));
    http::async_write(stream_, *response_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->DoneAnswering();
                        const bool again = !ec && self->response_->keep_alive();
                        self->response_.reset();
                        if (again) return self->ReadHeader();
                        if (ec) return self->Close();
                        self->Linger();
                      });
  }

  // After a closing response: stop sending, then read (and drop) what the client still
  // sends for a moment, so the close does not reset the connection before the client has
  // read the answer (a client still writing a refused body would see ECONNRESET).
  void Linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    stream_.expires_after(std::chrono::seconds(2));
    LingerRead();
  }
  void LingerRead() {
    if (lingered_ > (4u << 20)) return Close();
    stream_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec) return self->Close();
                              self->LingerRead();
                            });
  }

  void DoneAnswering() {
    if (!answering_) return;
    answering_ = false;
    --server_.answering;
  }

  void Close() {
    DoneAnswering();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    ReleaseBody();
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  HttpRequest request_;
  Clock::time_point start_ = Clock::now();
  size_t reserved_ = 0;
  bool keep_alive_ = true;
  bool closing_ = false;
  bool waiting_ = false;
  bool answering_ = false;  // counted in server_.answering
  std::list<Session*>::iterator waiting_it_;
  size_t lingered_ = 0;
  std::array<char, 16384> scratch_;
};

void HttpServer::Impl::Accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping) return;
    if (ec) {
      // Out of descriptors, or a connection reset before it was taken: try again shortly
      // (an immediate retry would spin).
      retry->expires_after(std::chrono::milliseconds(50));
      retry->async_wait([this](beast::error_code e) {
        if (!e) Accept();
      });
      return;
    }
    OnAccept(std::move(socket));
    Accept();
  });
}

void HttpServer::Impl::OnAccept(tcp::socket socket) {
  if (open >= options.max_connections) {
    if (!waiting.empty()) {
      waiting.front()->Evict();  // the longest wait for a header: idle or slow
    } else {
      // Every connection is busy with a request: a short refusal, best effort, then close.
      static const std::string kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Connection: close\r\nContent-Length: 45\r\n\r\n"
          "{\"error\":\"too many connections; retry later\"}";
      beast::error_code ec;
      socket.non_blocking(true, ec);
      socket.write_some(asio::buffer(kBusy), ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
      if (logger) logger(HttpRequest{}, 503, 0);
      return;
    }
  }
  beast::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  std::make_shared<Session>(*this, std::move(socket))->Start();
}

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->fallback = [](const HttpRequest& r) {
    return HttpResponse{404, "application/json",
                        ErrorJson(fmt::format("no endpoint {} {}", r.method, r.path)), {}};
  };
}

HttpServer::~HttpServer() = default;

void HttpServer::Route(std::string method, std::string path, HttpHandler handler, bool fast) {
  impl_->routes[{std::move(method), std::move(path)}] = {std::move(handler), fast};
}

void HttpServer::SetFallback(HttpHandler handler) { impl_->fallback = std::move(handler); }

void HttpServer::SetLogger(HttpLogger logger) { impl_->logger = std::move(logger); }

StatusOr<int> HttpServer::Bind() {
  const HttpServerOptions& o = impl_->options;
  beast::error_code ec;
  auto address = asio::ip::make_address(o.host, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot bind {}: not an IP address ({})", o.host, ec.message()));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  auto acceptor = std::make_unique<tcp::acceptor>(*impl_->io);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot bind {}:{} ({})", o.host, o.port, ec.message()));
  }
  const int port = acceptor->local_endpoint().port();
  impl_->acceptor = std::move(acceptor);
  impl_->retry = std::make_unique<asio::steady_timer>(*impl_->io);
  impl_->stop_timer = std::make_unique<asio::steady_timer>(*impl_->io);
  return port;
}

void HttpServer::Run() {
  impl_->Accept();
  impl_->io->run();
}

void HttpServer::Stop() {
  impl_->stopping = true;
  asio::post(*impl_->io, [impl = impl_.get()] {
    beast::error_code ec;
    if (impl->acceptor) impl->acceptor->close(ec);
    impl->StopWhenAnswered(Clock::now() + std::chrono::seconds(10));
  });
}

// Answers being written (or computed) are finished first, for at most 10 s.
void HttpServer::Impl::StopWhenAnswered(Clock::time_point deadline) {
  if (answering == 0 || Clock::now() >= deadline) {
    io->stop();
    return;
  }
  stop_timer->expires_after(std::chrono::milliseconds(20));
  stop_timer->async_wait([this, deadline](beast::error_code) { StopWhenAnswered(deadline); });
}

size_t HttpServer::open_connections() const { return impl_->open.load(); }

}  // namespace egca::serve
