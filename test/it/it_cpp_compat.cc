/* SPDX-License-Identifier: BSD-3-Clause */
// Integration: the parts of CANN hixl's hixl::Hixl that code written for it
// relies on beyond the basics (it_cpp_api.cc has those), between two
// processes, every byte checked where it landed:
//
//   - Initialize with the option sets CANN's examples pass (EnableUseFabricMem,
//     GlobalResourceConfig with connect_pool.* and comm_resource_config.*,
//     LocalCommRes, BufferPool "0:0", adxl.* spellings);
//   - ConnectAsync, both GetAsyncConnectStatus overloads, DisconnectAsync
//     polled until NOT_CONNECT, as hixl_example_d2rh does;
//   - TransferAsync with TransferArgs.user_data, and the batch
//     GetTransferStatus(GetTransferStatusArgs, results): oldest first,
//     user_data back, max_query_count, skip_waiting, reported once;
//   - GetTransferStatus(req) on a released request: FAILED in the status
//     (a loop that ignores the return value ends); nullptr: FAILED;
//   - Initialize again on one object: a fresh engine replaces the old one
//     (the old connection is gone, the new one connects and moves data); a
//     failed Initialize keeps the old one;
//   - DeregisterMem of a handle deregistered already: SUCCESS.
//
// UCX_TLS=tcp, then sm.  Plain C++ (no Check): exit 0 when everything
// held, 1 with the reason.
#include <hixl/hixl.h>

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace hixl;

namespace {

constexpr size_t kSlice = 96 * 1024 + 8;
constexpr uint32_t kSlices = 8;
constexpr size_t kRegion = kSlices * kSlice;
constexpr int32_t kOpMs = 20000;

int g_failures = 0;

void Fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void Fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "[%d] FAIL: ", static_cast<int>(getpid()));
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  ++g_failures;
}

#define EXPECT_STATUS(call, expected)                                                    \
  do {                                                                                   \
    Status st_ = (call);                                                                 \
    if (st_ != (expected)) {                                                             \
      Fail("%s:%d: %s returned %u, expected %u: %s", __FILE__, __LINE__, #call, st_,     \
           static_cast<Status>(expected), Hixl::GetLastErrorMessage());                  \
    }                                                                                    \
  } while (0)
#define EXPECT_OK(call) EXPECT_STATUS(call, SUCCESS)
#define EXPECT_TRUE(cond)                                                                \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      Fail("%s:%d: %s is false", __FILE__, __LINE__, #cond);                             \
    }                                                                                    \
  } while (0)

uint8_t Pat(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

void Fill(uint8_t *p, size_t len, uint64_t seed, uint64_t idx) {
  for (size_t i = 0; i < len; ++i) {
    p[i] = Pat(seed, idx + i);
  }
}

long long FindBad(const uint8_t *p, size_t len, uint64_t seed, uint64_t idx) {
  for (size_t i = 0; i < len; ++i) {
    if (p[i] != Pat(seed, idx + i)) {
      return static_cast<long long>(i);
    }
  }
  return -1;
}

bool Before(std::chrono::steady_clock::time_point t) {
  return std::chrono::steady_clock::now() < t;
}

std::chrono::steady_clock::time_point Deadline() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(kOpMs);
}

// ---- the pipe -----------------------------------------------------------------

struct Msg {
  char text[256];
  uint64_t addr;
  uint64_t seed;
  int32_t code;
};

int g_rd = -1;
int g_wr = -1;

bool Send(const char *text, uint64_t addr = 0, uint64_t seed = 0, int32_t code = 0) {
  Msg m{};
  std::snprintf(m.text, sizeof(m.text), "%s", text);
  m.addr = addr;
  m.seed = seed;
  m.code = code;
  return write(g_wr, &m, sizeof(m)) == static_cast<ssize_t>(sizeof(m));
}

bool Recv(Msg &m) {
  size_t got = 0;
  pollfd pfd{g_rd, POLLIN, 0};
  while (got < sizeof(m)) {
    if (poll(&pfd, 1, 90000) <= 0) {
      return false;
    }
    ssize_t n = read(g_rd, reinterpret_cast<char *>(&m) + got, sizeof(m) - got);
    if (n <= 0) {
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

// ---- decode: a listener with the options of CANN's examples -------------------

int RunDecode() {
  std::map<AscendString, AscendString> options{
      {"hixl.ListenEphemeral", "1"},
      {OPTION_GLOBAL_RESOURCE_CONFIG,
       "{\"comm_resource_config.protocol_desc\": [\"roce:device\", \"roce:host\"], "
       "\"comm_resource_config.listen_port\": \"26666\"}"},
      {OPTION_LOCAL_COMM_RES, "{\"version\": \"1.2\"}"},
      {OPTION_BUFFER_POOL, "0:0"},
  };
  Hixl engine;
  if (engine.Initialize("127.0.0.1:0", options) != SUCCESS) {
    Fail("decode Initialize: %s", Hixl::GetLastErrorMessage());
    return 1;
  }
  auto *region = static_cast<uint8_t *>(
      mmap(nullptr, kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  Fill(region, kRegion, 5, 0);
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(region);
  desc.len = kRegion;
  MemHandle handle = nullptr;
  EXPECT_OK(engine.RegisterMem(desc, MEM_HOST, handle));
  Send(engine.GetEngineName().GetString(), desc.addr);
  Msg m{};
  // "check SEED": the whole region must hold pattern SEED; "bye" ends
  while (Recv(m) && std::strcmp(m.text, "bye") != 0) {
    long long bad = FindBad(region, kRegion, m.seed, 0);
    if (bad >= 0) {
      Fail("decode: byte %lld is %u, expected %u (seed %llu)", bad, region[bad],
           Pat(m.seed, bad), static_cast<unsigned long long>(m.seed));
    }
    Send("checked", 0, 0, bad >= 0);
  }
  EXPECT_OK(engine.DeregisterMem(handle));
  EXPECT_OK(engine.DeregisterMem(handle));  // a no-op, as CANN documents
  engine.Finalize();
  munmap(region, kRegion);
  return g_failures ? 1 : 0;
}

// ---- prefill ------------------------------------------------------------------

bool AwaitAsync(Hixl &engine, const AscendString &remote, AsyncConnectStatus want) {
  AsyncConnectStatus st = AsyncConnectStatus::CONNECT_FAILED;
  auto deadline = Deadline();
  do {
    EXPECT_OK(engine.GetAsyncConnectStatus(remote, st));
    if (st == want) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (Before(deadline) && (st != AsyncConnectStatus::CONNECT_FAILED));
  Fail("async status of %s is %d, waited for %d: %s", remote.GetString(),
       static_cast<int>(st), static_cast<int>(want), Hixl::GetLastErrorMessage());
  return false;
}

bool DecodeHolds(uint64_t seed, const char *label) {
  Msg m{};
  if (!Send("check", 0, seed) || !Recv(m) || (m.code != 0)) {
    Fail("[%s] decode's region does not hold pattern %llu", label,
         static_cast<unsigned long long>(seed));
    return false;
  }
  return true;
}

// Eight async writes, each with its own user_data, collected through the
// batch status call.
void BatchStatus(Hixl &engine, const AscendString &decode, uint64_t remote, uint8_t *local,
                 uint64_t seed, const char *label) {
  int tags[kSlices];
  std::vector<TransferReq> reqs(kSlices, nullptr);
  Fill(local, kRegion, seed, 0);
  for (uint32_t i = 0; i < kSlices; ++i) {
    std::vector<TransferOpDesc> d{
        {reinterpret_cast<uintptr_t>(local) + i * kSlice, remote + i * kSlice, kSlice}};
    TransferArgs args;
    args.user_data = &tags[i];
    EXPECT_OK(engine.TransferAsync(decode, WRITE, d, args, reqs[i]));
  }

  // max_query_count: only the oldest requests are looked at
  GetTransferStatusArgs two;
  two.max_query_count = 2;
  std::vector<TransferResult> results(5);   // cleared by the call
  EXPECT_OK(engine.GetTransferStatus(two, results));
  EXPECT_TRUE(results.size() == 2);
  std::vector<bool> seen(kSlices, false);
  uint32_t done = 0;
  auto take = [&](const std::vector<TransferResult> &rs) {
    for (const auto &r : rs) {
      uint32_t i = 0;
      while ((i < kSlices) && (reqs[i] != r.req)) {
        ++i;
      }
      if (i == kSlices) {
        Fail("[%s] a result for an unknown request", label);
        continue;
      }
      if (r.user_data != &tags[i]) {
        Fail("[%s] request %u came back with user_data %p, not %p", label, i, r.user_data,
             static_cast<const void *>(&tags[i]));
      }
      if (r.status == TransferStatus::WAITING) {
        continue;
      }
      if (seen[i]) {
        Fail("[%s] request %u reported twice", label, i);
      }
      if (r.status != TransferStatus::COMPLETED) {
        Fail("[%s] request %u ended %d", label, i, static_cast<int>(r.status));
      }
      seen[i] = true;
      ++done;
    }
  };
  if (results.size() == 2) {
    EXPECT_TRUE(results[0].req == reqs[0] && results[1].req == reqs[1]);  // oldest first
  }
  take(results);
  GetTransferStatusArgs all;   // no limit
  GetTransferStatusArgs finished;
  finished.skip_waiting = true;
  auto deadline = Deadline();
  bool flip = false;
  while ((done < kSlices) && Before(deadline)) {
    EXPECT_OK(engine.GetTransferStatus(flip ? finished : all, results));
    for (const auto &r : results) {
      if (flip && (r.status == TransferStatus::WAITING)) {
        Fail("[%s] skip_waiting returned a WAITING request", label);
      }
    }
    take(results);
    flip = !flip;
  }
  EXPECT_TRUE(done == kSlices);
  EXPECT_OK(engine.GetTransferStatus(all, results));
  EXPECT_TRUE(results.empty());   // every one reported, so released
  GetTransferStatusArgs none;
  none.max_query_count = 0;
  EXPECT_OK(engine.GetTransferStatus(none, results));
  EXPECT_TRUE(results.empty());

  // a released request: FAILED in the status, whatever the return
  TransferStatus st = TransferStatus::WAITING;
  EXPECT_TRUE(engine.GetTransferStatus(reqs[0], st) != SUCCESS);
  EXPECT_TRUE(st == TransferStatus::FAILED);
  st = TransferStatus::COMPLETED;
  EXPECT_STATUS(engine.GetTransferStatus(TransferReq{nullptr}, st), FAILED);
  EXPECT_TRUE(st == TransferStatus::COMPLETED);   // left alone
  DecodeHolds(seed, label);
}

void RunPrefill(const char *label) {
  Msg m{};
  if (!Recv(m)) {
    Fail("[%s] no word from decode", label);
    return;
  }
  const AscendString decode(m.text);
  const uint64_t remote = m.addr;
  std::vector<uint8_t> local(kRegion);
  std::map<AscendString, AscendString> options{
      {OPTION_ENABLE_USE_FABRIC_MEM, "1"},
      {OPTION_GLOBAL_RESOURCE_CONFIG,
       "{\"connect_pool.thread_num\": \"1\", \"connect_pool.task_queue_capacity\": 4, "
       "\"fabric_memory.max_capacity\": \"128\"}"},
      {"adxl.LocalCommRes", ""},
      {OPTION_AUTO_CONNECT, "0"},
  };
  Hixl engine;
  EXPECT_OK(engine.Initialize("127.0.0.1", options));
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(local.data());
  desc.len = kRegion;
  MemHandle handle = nullptr;
  EXPECT_OK(engine.RegisterMem(desc, MEM_HOST, handle));

  // ConnectAsync, as hixl_example_d2rh: submit, poll both overloads
  EXPECT_STATUS(engine.ConnectAsync(decode, 0), PARAM_INVALID);
  EXPECT_OK(engine.ConnectAsync(decode));
  AsyncConnectStatus st = AsyncConnectStatus::NOT_CONNECT;
  EXPECT_OK(engine.GetAsyncConnectStatus(decode, st));
  EXPECT_TRUE(st == AsyncConnectStatus::CONNECT_PENDING || st == AsyncConnectStatus::CONNECTING ||
              st == AsyncConnectStatus::CONNECTED);
  AwaitAsync(engine, decode, AsyncConnectStatus::CONNECTED);
  std::map<AscendString, AsyncConnectStatus> all{{AscendString("stale"),
                                                  AsyncConnectStatus::CONNECTING}};
  EXPECT_OK(engine.GetAsyncConnectStatus(all));
  EXPECT_TRUE(all.size() == 1 && all.count(decode) == 1 &&
              all[decode] == AsyncConnectStatus::CONNECTED);
  EXPECT_OK(engine.GetAsyncConnectStatus(AscendString("127.0.0.1:9"), st));
  EXPECT_TRUE(st == AsyncConnectStatus::NOT_CONNECT);

  BatchStatus(engine, decode, remote, local.data(), 11, label);

  // READ back what decode holds
  std::fill(local.begin(), local.end(), 0);
  std::vector<TransferOpDesc> rd{{desc.addr, remote, kRegion}};
  EXPECT_OK(engine.TransferSync(decode, READ, rd, kOpMs));
  long long bad = FindBad(local.data(), kRegion, 11, 0);
  if (bad >= 0) {
    Fail("[%s] READ: byte %lld wrong", label, bad);
  }

  // Initialize again: a fresh engine replaces this one
  const std::string old_name = engine.GetEngineName().GetString();
  EXPECT_STATUS(engine.Initialize("not an engine name", options), PARAM_INVALID);
  EXPECT_TRUE(old_name == engine.GetEngineName().GetString());   // kept
  EXPECT_OK(engine.GetAsyncConnectStatus(decode, st));
  EXPECT_TRUE(st == AsyncConnectStatus::CONNECTED);
  std::map<AscendString, AscendString> fresh{{"hixl.ListenEphemeral", "1"}};
  EXPECT_OK(engine.Initialize("127.0.0.1:0", fresh));
  EXPECT_TRUE(old_name != engine.GetEngineName().GetString());
  EXPECT_OK(engine.GetAsyncConnectStatus(decode, st));
  EXPECT_TRUE(st == AsyncConnectStatus::NOT_CONNECT);   // the old table went
  EXPECT_STATUS(engine.TransferSync(decode, READ, rd, kOpMs), NOT_CONNECTED);
  EXPECT_OK(engine.RegisterMem(desc, MEM_HOST, handle));   // the new engine's
  EXPECT_OK(engine.ConnectAsync(decode, kOpMs));
  AwaitAsync(engine, decode, AsyncConnectStatus::CONNECTED);
  Fill(local.data(), kRegion, 12, 0);
  std::vector<TransferOpDesc> wr{{desc.addr, remote, kRegion}};
  EXPECT_OK(engine.TransferSync(decode, WRITE, wr, kOpMs));
  DecodeHolds(12, label);

  // DisconnectAsync, polled until NOT_CONNECT (d2rh polls with no timeout)
  EXPECT_OK(engine.DisconnectAsync(decode));
  AwaitAsync(engine, decode, AsyncConnectStatus::NOT_CONNECT);
  EXPECT_OK(engine.GetAsyncConnectStatus(all));
  EXPECT_TRUE(all.empty());
  EXPECT_OK(engine.DeregisterMem(handle));
  EXPECT_OK(engine.DeregisterMem(handle));
  EXPECT_STATUS(engine.DeregisterMem(nullptr), PARAM_INVALID);
  Send("bye");
  engine.Finalize();
  EXPECT_STATUS(engine.ConnectAsync(decode), FAILED);
  EXPECT_STATUS(engine.GetAsyncConnectStatus(all), FAILED);
  std::vector<TransferResult> results;
  EXPECT_STATUS(engine.GetTransferStatus(GetTransferStatusArgs{}, results), FAILED);
}

int RunPair(const char *tls) {
  setenv("UCX_TLS", tls, 1);
  int to_child[2];
  int to_parent[2];
  if ((pipe(to_child) != 0) || (pipe(to_parent) != 0)) {
    Fail("pipe");
    return 1;
  }
  std::fflush(nullptr);
  pid_t pid = fork();   // before any engine exists here
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(120);
    g_rd = to_child[0];
    g_wr = to_parent[1];
    close(to_child[1]);
    close(to_parent[0]);
    std::exit(RunDecode());
  }
  g_rd = to_parent[0];
  g_wr = to_child[1];
  close(to_child[0]);
  close(to_parent[1]);
  int before = g_failures;
  RunPrefill(tls);
  close(g_rd);
  close(g_wr);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
    Fail("[%s] decode exited with status %#x", tls, status);
  }
  std::fprintf(stderr, "%s: UCX_TLS=%s\n", (g_failures != before) ? "FAIL" : "PASS", tls);
  return g_failures != before;
}

}  // namespace

int main() {
  // one pair per process: nothing here forks with UCX loaded
  const char *tls[] = {"tcp", "sm"};
  int failed = 0;
  for (const char *t : tls) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      alarm(150);
      std::exit(RunPair(t));
    }
    int status = 0;
    if ((pid < 0) || (waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
      std::fprintf(stderr, "FAIL: the pair under UCX_TLS=%s (status %#x)\n", t, status);
      failed = 1;
    }
  }
  return failed;
}
