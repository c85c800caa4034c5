/* SPDX-License-Identifier: BSD-3-Clause */
// Integration: CANN hixl's C interface from C++, the way CANN's own code
// uses it: <hixl/hixl.h> (the hixl::Hixl class) and <cs/hixl_cs.h> in one
// translation unit (it_cs.c includes them the other way round, in C), the
// structures default-initialized by their member initializers, the status
// names used as CANN's `static const uint32_t` are (HixlStatus variables,
// comparisons, a switch, a constexpr context).
//
// A forked server registers a tagged region; this process, the client,
// fetches the table, Puts a pattern into the region and Gets it back, and
// the server checks the bytes it holds.  Also hixl::Hixl's capability, so
// that both C++ surfaces are used from one file.  UCX_TLS=tcp, then sm.
//
// Plain C++ (no Check): exit 0 when everything held, 1 with the reason.
#include <hixl/hixl.h>
#include <cs/hixl_cs.h>
#include <hixl/hixl.h>   // again, after cs/: still the class

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kLen = 256 * 1024 + 24;
constexpr uint32_t kWaitMs = 30000;

int g_failures = 0;

#define EXPECT(cond)                                                               \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "[%d] FAIL %s:%d: %s (%s)\n", static_cast<int>(getpid()), \
                   __FILE__, __LINE__, #cond, hixl_last_error());                  \
      ++g_failures;                                                                \
    }                                                                              \
  } while (0)

// As CANN's code does with its constants.
static_assert(HIXL_SUCCESS == 0U && HIXL_PARAM_INVALID == 103900U && HIXL_TIMEOUT == 103901U &&
                  HIXL_FAILED == 503900U,
              "status numbers");

const char *Name(HixlStatus st) {
  switch (st) {
    case HIXL_SUCCESS:
      return "SUCCESS";
    case HIXL_PARAM_INVALID:
      return "PARAM_INVALID";
    case HIXL_TIMEOUT:
      return "TIMEOUT";
    case HIXL_FAILED:
      return "FAILED";
    default:
      return "other";
  }
}

uint8_t Pat(size_t i, uint8_t seed) {
  return static_cast<uint8_t>((i * 131u + seed) ^ (i >> 9));
}

uint32_t FreePort() {
  sockaddr_in sa{};
  socklen_t sl = sizeof(sa);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((fd < 0) || (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) ||
      (getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &sl) != 0)) {
    std::perror("socket");
    std::exit(1);
  }
  close(fd);
  return ntohs(sa.sin_port);
}

bool ReadAll(int fd, void *buf, size_t len) {
  pollfd p{fd, POLLIN, 0};
  auto *b = static_cast<uint8_t *>(buf);
  while (len > 0) {
    if (poll(&p, 1, static_cast<int>(kWaitMs)) <= 0) {
      return false;
    }
    ssize_t n = read(fd, b, len);
    if (n <= 0) {
      return false;
    }
    b += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// The server: a tagged region holding pattern 1; after the client's word,
// check it holds pattern 2 (the client's Put), then destroy.
int Server(uint32_t port, int up, int down) {
  std::vector<uint8_t> region(kLen);
  for (size_t i = 0; i < kLen; ++i) {
    region[i] = Pat(i, 1);
  }
  HixlServerDesc desc;          // member initializers: reserved zeroed
  HixlServerConfig config;      // global_resource_config = nullptr
  desc.endpoint_list = nullptr;
  desc.endpoint_list_num = 0;
  desc.server_ip = "127.0.0.1";
  desc.server_port = port;
  HixlServerHandle server = nullptr;
  HixlStatus ret = HixlCSServerCreate(&desc, &config, &server);
  MemHandle handle = nullptr;
  CommMem mem{COMM_MEM_TYPE_HOST, region.data(), kLen};
  if (ret == HIXL_SUCCESS) {
    ret = HixlCSServerRegMem(server, "kv", &mem, &handle);
  }
  if (ret == HIXL_SUCCESS) {
    ret = HixlCSServerListen(server, 8);
  }
  uint64_t addr = reinterpret_cast<uintptr_t>(region.data());
  if ((ret != HIXL_SUCCESS) || (write(up, &addr, sizeof(addr)) != sizeof(addr))) {
    std::fprintf(stderr, "server: %s: %s\n", Name(ret), hixl_last_error());
    return 1;
  }
  char word = 0;
  if (!ReadAll(down, &word, 1)) {
    std::fprintf(stderr, "server: no word from the client\n");
    return 1;
  }
  for (size_t i = 0; i < kLen; ++i) {
    if (region[i] != Pat(i, 2)) {
      std::fprintf(stderr, "server: byte %zu is %u, not %u\n", i, region[i], Pat(i, 2));
      ++g_failures;
      break;
    }
  }
  EXPECT(HixlCSServerUnregMem(server, handle) == HIXL_SUCCESS);
  EXPECT(HixlCSServerDestroy(server) == HIXL_SUCCESS);
  return g_failures ? 1 : 0;
}

void Client(uint32_t port, uint64_t remote) {
  EndpointDesc ep{};
  (void)EndpointDescInit(&ep, 1);
  HixlClientDesc desc;
  HixlClientConfig config;
  desc.local_endpoint = &ep;
  desc.remote_endpoint = &ep;
  desc.server_ip = "127.0.0.1";
  desc.server_port = port;
  desc.tc = 0;
  desc.sl = 0;
  HixlClientHandle client = nullptr;
  HixlStatus ret = HixlCSClientCreate(&desc, &config, &client);
  EXPECT(ret == HIXL_SUCCESS);
  std::vector<uint8_t> local(kLen);
  CommMem mem{COMM_MEM_TYPE_HOST, local.data(), kLen};
  MemHandle handle = nullptr;
  EXPECT(HixlCSClientRegMem(client, "local", &mem, &handle) == HIXL_SUCCESS);
  EXPECT(HixlCSClientConnect(client, kWaitMs) == HIXL_SUCCESS);

  CommMem *mems = nullptr;
  char **tags = nullptr;
  uint32_t n = 0;
  EXPECT(HixlCSClientGetRemoteMem(client, &mems, &tags, &n, kWaitMs) == HIXL_SUCCESS);
  EXPECT(n == 1);
  if (n == 1) {
    EXPECT(std::strcmp(tags[0], "kv") == 0);
    EXPECT(reinterpret_cast<uintptr_t>(mems[0].addr) == remote);
    EXPECT(mems[0].size == kLen);
  }

  // Get: the server's pattern 1, all of it
  HixlOneSideOpDesc op{reinterpret_cast<void *>(static_cast<uintptr_t>(remote)), local.data(),
                       kLen};
  EXPECT(HixlCSClientBatchGetSync(client, 1, &op, kWaitMs) == HIXL_SUCCESS);
  for (size_t i = 0; i < kLen; ++i) {
    if (local[i] != Pat(i, 1)) {
      std::fprintf(stderr, "client: byte %zu is %u, not %u\n", i, local[i], Pat(i, 1));
      ++g_failures;
      break;
    }
  }
  // Put: pattern 2 over it, async, queried until done
  for (size_t i = 0; i < kLen; ++i) {
    local[i] = Pat(i, 2);
  }
  CompleteHandle done = nullptr;
  EXPECT(HixlCSClientBatchPutAsync(client, 1, &op, &done) == HIXL_SUCCESS);
  HixlCompleteStatus st = HIXL_COMPLETE_STATUS_WAITING;
  for (int spins = 0; (spins < 300000) && (st == HIXL_COMPLETE_STATUS_WAITING); ++spins) {
    EXPECT(HixlCSClientQueryCompleteStatus(client, done, &st) == HIXL_SUCCESS);
    if (st == HIXL_COMPLETE_STATUS_WAITING) {
      usleep(100);
    }
  }
  EXPECT(st == HIXL_COMPLETE_STATUS_COMPLETED);
  EXPECT(HixlCSClientUnregMem(client, handle) == HIXL_SUCCESS);
  EXPECT(HixlCSClientDestroy(client) == HIXL_SUCCESS);
}

int RunPair(const char *tls) {
  setenv("UCX_TLS", tls, 1);
  int up[2], down[2];
  uint32_t port = FreePort();
  if ((pipe(up) != 0) || (pipe(down) != 0)) {
    std::perror("pipe");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(120);
    close(up[0]);
    close(down[1]);
    _exit(Server(port, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  uint64_t remote = 0;
  if (!ReadAll(up[0], &remote, sizeof(remote))) {
    std::fprintf(stderr, "[%s] the server did not start\n", tls);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return 1;
  }
  Client(port, remote);
  char word = 'v';
  EXPECT(write(down[1], &word, 1) == 1);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
  close(up[0]);
  close(down[1]);
  std::fprintf(stderr, "%s: UCX_TLS=%s\n", g_failures ? "FAIL" : "PASS", tls);
  return g_failures;
}

}  // namespace

int main() {
  int32_t value = 0;
  EXPECT(hixl::Hixl::GetCapability(hixl::CLIENT_SERVER_COMM, value) == hixl::SUCCESS);
  EXPECT(value == hixl::FEATURE_SUPPORTED);
  HixlStatus fresh = HIXL_FAILED;   // as CANN's code initializes them
  EXPECT(fresh != HIXL_SUCCESS);
  if (RunPair("tcp") != 0 || RunPair("sm") != 0) {
    return 1;
  }
  return 0;
}
