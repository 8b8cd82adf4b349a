// Expect VIOLATION (socket): no network.
#include <arpa/inet.h>
#include <sys/socket.h>
int main() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(80);
  a.sin_addr.s_addr = htonl(0x01010101);
  connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  return 0;
}
