/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the header-only C++ API (hixl/hixl.hpp), in the style of
 * code written against CANN hixl's hixl::Hixl.
 *
 * A decode process (forked child) listens, allocates its KV cache and a
 * block region, and publishes (name, addresses) over a pipe.  The prefill
 * process (this one) connects, writes every layer of K and V (TransferSync
 * for even layers, TransferAsync + GetTransferStatus for odd ones), flushes
 * each layer, and sends a "kv_ready" notify with a binary message.  Decode
 * waits for each layer and checks every byte of it the moment it is ready,
 * then checks the notify.  Prefill then reads the decode's block region back
 * (READ) and checks it, and tries the calls hixl defines errors for.
 * Repeated for UCX_TLS=tcp, sm and UCX's default.
 *
 * Plain C++ (no Check): exit 0 when everything held, 1 with the reason.
 */
#include <hixl/hixl_types.h>
#include <hixl/hixl.hpp>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace hixl;

namespace {

constexpr uint32_t kLayers = 12;
constexpr size_t kHalf = 192 * 1024 + 40;    // K (or V) bytes of one layer
constexpr size_t kLayer = 2 * kHalf;         // K then V
constexpr size_t kKvBytes = kLayers * kLayer;
constexpr size_t kBlockBytes = 1024 * 1024 + 7;
constexpr uint32_t kStream = 3;
constexpr uint64_t kGeneration = 1;
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

#define EXPECT_STATUS(call, expected)                                                       \
  do {                                                                                      \
    Status st_ = (call);                                                                    \
    if (st_ != (expected)) {                                                                \
      Fail("%s:%d: %s returned %u, expected %u: %s", __FILE__, __LINE__, #call, st_,        \
           static_cast<Status>(expected), Hixl::GetLastErrorMessage());                     \
    }                                                                                       \
  } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(call, SUCCESS)

#define EXPECT_TRUE(cond)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      Fail("%s:%d: %s is false", __FILE__, __LINE__, #cond);                                \
    }                                                                                       \
  } while (0)

// Byte i of stream `seed`: a function of both, so misplaced bytes show.
uint8_t Pat(uint64_t seed, uint64_t i) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + (i >> 3);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<uint8_t>(x >> ((i & 7) * 8));
}

void Fill(void *p, size_t len, uint64_t seed, uint64_t idx) {
  auto *b = static_cast<uint8_t *>(p);
  for (size_t i = 0; i < len; ++i) {
    b[i] = Pat(seed, idx + i);
  }
}

// Offset of the first wrong byte, or -1.
long long FindBad(const void *p, size_t len, uint64_t seed, uint64_t idx) {
  auto *b = static_cast<const uint8_t *>(p);
  for (size_t i = 0; i < len; ++i) {
    if (b[i] != Pat(seed, idx + i)) {
      return static_cast<long long>(i);
    }
  }
  return -1;
}

const uint64_t kKvSeed = 77;
const uint64_t kBlockSeed = 88;

// The notify message: every byte value, NULs included.
std::string NotifyMessage() {
  std::string m;
  for (int i = 0; i < 300; ++i) {
    m.push_back(static_cast<char>(i * 7));
  }
  return m;
}

// ---- the pipe between the two processes ------------------------------------

struct Link {
  int rd = -1;
  int wr = -1;
};

struct Msg {
  char text[512];
  uint64_t a;
  uint64_t b;
  int32_t code;
};

bool Send(const Link &l, const char *text, uint64_t a = 0, uint64_t b = 0, int32_t code = 0) {
  Msg m{};
  std::snprintf(m.text, sizeof(m.text), "%s", text);
  m.a = a;
  m.b = b;
  m.code = code;
  return write(l.wr, &m, sizeof(m)) == static_cast<ssize_t>(sizeof(m));
}

bool Recv(const Link &l, Msg &m) {
  size_t got = 0;
  pollfd pfd{l.rd, POLLIN, 0};
  while (got < sizeof(m)) {
    if (poll(&pfd, 1, 90000) <= 0) {
      return false;
    }
    ssize_t n = read(l.rd, reinterpret_cast<char *>(&m) + got, sizeof(m) - got);
    if (n <= 0) {
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

// ---- AscendString, the types, a Hixl that was never initialized --------------

void CheckTypes() {
  AscendString empty;
  AscendString null_name(nullptr);
  AscendString hello("hello");
  AscendString bin("a\0b", 3);
  AscendString copy = hello;

  EXPECT_TRUE(std::strcmp(empty.GetString(), "") == 0 && empty.GetLength() == 0);
  EXPECT_TRUE(null_name == empty && null_name.GetLength() == 0);
  EXPECT_TRUE(AscendString("") != empty);  // null and "" differ, as in CANN
  EXPECT_TRUE(empty < AscendString(""));
  EXPECT_TRUE(bin.GetLength() == 3 && std::memcmp(bin.GetString(), "a\0b", 3) == 0);
  EXPECT_TRUE(copy == hello && hello == "hello" && hello != "world");
  EXPECT_TRUE(AscendString("a") < AscendString("b") && AscendString("b") > AscendString("a"));
  EXPECT_TRUE(AscendString("a") <= AscendString("a") && AscendString("a") >= AscendString("a"));
  EXPECT_TRUE(hello.Find(AscendString("ll")) == 2 && hello.Find(empty) == std::string::npos);
  EXPECT_TRUE(hello.Hash() == std::hash<std::string>()("hello"));

  std::map<AscendString, AscendString> options{{"b", "2"}, {"a", "1"}};
  EXPECT_TRUE(std::strcmp(options.begin()->first.GetString(), "a") == 0);
  std::unordered_map<AscendString, int> by_hash{{AscendString("x"), 1}};
  EXPECT_TRUE(by_hash.count(AscendString("x")) == 1);

  static_assert(SUCCESS == 0U && PARAM_INVALID == 103900U && TIMEOUT == 103901U &&
                    NOT_CONNECTED == 103902U && ALREADY_CONNECTED == 103903U &&
                    NOTIFY_FAILED == 103904U && UNSUPPORTED == 103905U &&
                    RESOURCE_EXHAUSTED == 203900U && FAILED == 503900U,
                "status numbers");
  static_assert(MEM_DEVICE == 0 && MEM_HOST == 1 && READ == 0 && WRITE == 1, "enum orders");
  static_assert(sizeof(MemDesc) >= 128 + sizeof(uintptr_t) + sizeof(size_t), "MemDesc");
  static_assert(std::is_same<MemHandle, void *>::value && std::is_same<TransferReq, void *>::value,
                "handles are void *");

  int32_t value = -1;
  EXPECT_OK(Hixl::GetCapability(AUTO_CONNECT, value));
  EXPECT_TRUE(value == FEATURE_SUPPORTED);
  EXPECT_OK(Hixl::GetCapability(CLIENT_SERVER_COMM, value));
  EXPECT_TRUE(value == FEATURE_SUPPORTED);   // listen / connect, as in hixl
  EXPECT_STATUS(Hixl::GetCapability(static_cast<FeatureType>(-1), value), PARAM_INVALID);

  // hixl answers FAILED before Initialize, and ignores a Finalize
  Hixl idle;
  MemHandle h = nullptr;
  MemDesc desc{};
  desc.addr = 4096;
  desc.len = 4096;
  EXPECT_STATUS(idle.RegisterMem(desc, MEM_HOST, h), FAILED);
  EXPECT_STATUS(idle.Connect("127.0.0.1:1"), FAILED);
  std::vector<NotifyDesc> none;
  EXPECT_STATUS(idle.GetNotifies(none), FAILED);
  idle.Finalize();
  EXPECT_TRUE(std::strcmp(idle.GetEngineName().GetString(), "") == 0);
}

// ---- decode (the child) -------------------------------------------------------

int RunDecode(const Link &l) {
  Hixl engine;
  std::map<AscendString, AscendString> options;
  options[AscendString("hixl.ListenEphemeral")] = AscendString("1");
  if (engine.Initialize(AscendString("127.0.0.1:0"), options) != SUCCESS) {
    Fail("decode Initialize: %s", Hixl::GetLastErrorMessage());
    return 1;
  }

  // The KV cache comes from the engine (peers write into it); the block
  // region is ordinary memory registered with RegisterMem.
  void *kv = nullptr;
  MemHandle kv_handle = nullptr;
  EXPECT_OK(engine.AllocMem(kKvBytes, MEM_HOST, kv, kv_handle));
  void *block = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
  MemHandle block_handle = nullptr;
  MemDesc block_desc{};
  block_desc.addr = reinterpret_cast<uintptr_t>(block);
  block_desc.len = kBlockBytes;
  EXPECT_OK(engine.RegisterMem(block_desc, MEM_HOST, block_handle));
  if (g_failures != 0 || kv == nullptr || block == MAP_FAILED) {
    return 1;
  }
  std::memset(kv, 0, kKvBytes);
  Fill(block, kBlockBytes, kBlockSeed, 0);

  Send(l, engine.GetEngineName().GetString(), reinterpret_cast<uintptr_t>(kv),
       reinterpret_cast<uintptr_t>(block));
  Msg m{};
  if (!Recv(l, m)) {
    Fail("decode: no prefill name");
    return 1;
  }
  const AscendString prefill(m.text);

  // Each layer is checked the moment its signal is seen.
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    EXPECT_OK(engine.WaitLayer(prefill, kStream, kGeneration, layer, kOpMs));
    const uint8_t *p = static_cast<const uint8_t *>(kv) + layer * kLayer;
    long long bad = FindBad(p, kLayer, kKvSeed, layer * kLayer);
    if (bad >= 0) {
      Fail("decode: layer %u byte %lld is %u, expected %u when the layer was ready", layer, bad,
           p[bad], Pat(kKvSeed, layer * kLayer + bad));
    }
  }

  // The notify arrives after the data; wait for it like a hixl user would.
  std::vector<NotifyDesc> notifies;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kOpMs);
  while (notifies.empty() && std::chrono::steady_clock::now() < deadline) {
    EXPECT_OK(engine.GetNotifies(notifies));
    if (notifies.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  const std::string expect = NotifyMessage();
  if (notifies.size() != 1) {
    Fail("decode: %zu notifies, expected 1", notifies.size());
  } else {
    EXPECT_TRUE(notifies[0].name == "kv_ready");
    EXPECT_TRUE(notifies[0].notify_msg.GetLength() == expect.size() &&
                std::memcmp(notifies[0].notify_msg.GetString(), expect.data(), expect.size()) == 0);
  }
  long long bad = FindBad(kv, kKvBytes, kKvSeed, 0);
  if (bad >= 0) {
    Fail("decode: KV byte %lld wrong at the end", bad);
  }

  // Tell prefill; stay up until it read the block region back.
  Send(l, "checked", 0, 0, g_failures);
  if (!Recv(l, m)) {
    Fail("decode: no bye from prefill");
  }
  EXPECT_OK(engine.DeregisterMem(block_handle));
  EXPECT_OK(engine.DeregisterMem(block_handle));   // a no-op, as hixl documents
  EXPECT_STATUS(engine.DeregisterMem(nullptr), PARAM_INVALID);
  EXPECT_OK(engine.DeregisterMem(kv_handle));
  engine.Finalize();
  munmap(block, kBlockBytes);
  return g_failures ? 1 : 0;
}

// ---- prefill (this process) ----------------------------------------------------

void RunPrefill(const Link &l, const char *tls_label) {
  Msg m{};
  if (!Recv(l, m)) {
    Fail("[%s] prefill: no word from decode", tls_label);
    return;
  }
  const AscendString decode(m.text);
  const uintptr_t remote_kv = m.a;
  const uintptr_t remote_block = m.b;

  Hixl engine;
  std::map<AscendString, AscendString> options;
  EXPECT_OK(engine.Initialize("127.0.0.1", options));  // client-only
  EXPECT_OK(engine.Initialize("127.0.0.1", options));  // a fresh engine, as in hixl

  std::vector<uint8_t> kv(kKvBytes);
  std::vector<uint8_t> readback(kBlockBytes);
  Fill(kv.data(), kKvBytes, kKvSeed, 0);
  MemHandle kv_handle = nullptr;
  MemHandle rb_handle = nullptr;
  MemDesc desc{};
  desc.addr = reinterpret_cast<uintptr_t>(kv.data());
  desc.len = kv.size();
  EXPECT_OK(engine.RegisterMem(desc, MEM_HOST, kv_handle));
  desc.addr = reinterpret_cast<uintptr_t>(readback.data());
  desc.len = readback.size();
  EXPECT_OK(engine.RegisterMem(desc, MEM_HOST, rb_handle));

  EXPECT_OK(engine.Connect(decode, kOpMs));
  EXPECT_STATUS(engine.Connect(decode, kOpMs), ALREADY_CONNECTED);
  Send(l, engine.GetEngineName().GetString());

  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    const size_t off = layer * kLayer;
    std::vector<TransferOpDesc> descs;
    descs.push_back({reinterpret_cast<uintptr_t>(kv.data() + off), remote_kv + off, kHalf});
    descs.push_back(
        {reinterpret_cast<uintptr_t>(kv.data() + off + kHalf), remote_kv + off + kHalf, kHalf});
    if (layer % 2 == 0) {
      EXPECT_OK(engine.TransferSync(decode, WRITE, descs, kOpMs));
    } else {
      TransferReq req = nullptr;
      TransferArgs args;
      EXPECT_OK(engine.TransferAsync(decode, WRITE, descs, args, req));
      TransferStatus status = TransferStatus::WAITING;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kOpMs);
      while (status == TransferStatus::WAITING && std::chrono::steady_clock::now() < deadline) {
        EXPECT_OK(engine.GetTransferStatus(req, status));
      }
      if (status != TransferStatus::COMPLETED) {
        Fail("[%s] layer %u: async write ended %d: %s", tls_label, layer,
             static_cast<int>(status), Hixl::GetLastErrorMessage());
      }
      // a finished request is released by the call that reported it
      EXPECT_STATUS(engine.GetTransferStatus(req, status), PARAM_INVALID);
    }
    EXPECT_OK(engine.FlushLayer(decode, kStream, kGeneration, layer));
  }

  NotifyDesc notify;
  const std::string msg = NotifyMessage();
  notify.name = AscendString("kv_ready");
  notify.notify_msg = AscendString(msg.data(), msg.size());
  EXPECT_OK(engine.SendNotify(decode, notify));  // the default timeout

  if (!Recv(l, m) || m.code != 0) {
    Fail("[%s] decode found %d failures (see its lines above)", tls_label, m.code);
  }

  // READ: the decode's block region, back into ours
  std::vector<TransferOpDesc> rd{
      {reinterpret_cast<uintptr_t>(readback.data()), remote_block, kBlockBytes / 2},
      {reinterpret_cast<uintptr_t>(readback.data()) + kBlockBytes / 2,
       remote_block + kBlockBytes / 2, kBlockBytes - kBlockBytes / 2}};
  EXPECT_OK(engine.TransferSync(decode, READ, rd, kOpMs));
  long long bad = FindBad(readback.data(), kBlockBytes, kBlockSeed, 0);
  if (bad >= 0) {
    Fail("[%s] READ: byte %lld is %u, expected %u", tls_label, bad, readback[bad],
         Pat(kBlockSeed, bad));
  }

  // what hixl defines errors for
  std::vector<TransferOpDesc> outside{
      {reinterpret_cast<uintptr_t>(kv.data()), remote_kv + kKvBytes - 8, 64}};
  EXPECT_STATUS(engine.TransferSync(decode, WRITE, outside, kOpMs), PARAM_INVALID);
  EXPECT_STATUS(engine.TransferSync("127.0.0.1:1", WRITE, rd, kOpMs), NOT_CONNECTED);

  Send(l, "bye");
  EXPECT_OK(engine.Disconnect(decode, kOpMs));
  EXPECT_STATUS(engine.Disconnect(decode), NOT_CONNECTED);
  EXPECT_OK(engine.DeregisterMem(kv_handle));
  EXPECT_OK(engine.DeregisterMem(rb_handle));
  engine.Finalize();
}

// Prefill in this process, decode in a child forked before any engine.
int RunPairHere(const char *label) {
  int to_child[2];
  int to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
    Fail("pipe: %s", std::strerror(errno));
    return 1;
  }
  pid_t pid = fork();  // before any engine exists in this process
  if (pid == 0) {
    g_failures = 0;  // this process's own count: the parent's are not ours
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(120);
    close(to_child[1]);
    close(to_parent[0]);
    Link l;
    l.rd = to_child[0];
    l.wr = to_parent[1];
    std::exit(RunDecode(l));  // exit, not _exit: leak checkers run
  }
  close(to_child[0]);
  close(to_parent[1]);
  Link l;
  l.rd = to_parent[0];
  l.wr = to_child[1];
  int before = g_failures;
  RunPrefill(l, label);
  close(l.rd);
  close(l.wr);
  if (g_failures != before) {
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("[%s] decode exited with status %#x", label, status);
  }
  return g_failures != before;
}

// Each pair in a fresh process: no process here ever forks with UCX loaded
// and used.
void RunPair(const char *tls, const char *label) {
  if (tls != nullptr) {
    setenv("UCX_TLS", tls, 1);
  } else {
    unsetenv("UCX_TLS");
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    g_failures = 0;  // an earlier pair's failure must not fail this one
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(150);
    std::exit(RunPairHere(label));
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    Fail("[%s] the pair failed (status %#x)", label, status);
  }
  std::printf("%s: prefill -> decode, %s\n", (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                                                 ? "PASS" : "FAIL", label);
  std::fflush(stdout);
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);
  // the developer's HIXL_* settings must not change what this test sees
  for (const char *v : {"HIXL_PROGRESS_THREAD", "HIXL_LISTEN_EPHEMERAL", "HIXL_AUTO_CONNECT",
                        "HIXL_LOG_LEVEL", "HIXL_SECRET"}) {
    unsetenv(v);
  }
  CheckTypes();
  std::printf("%s: types and AscendString\n", g_failures ? "FAIL" : "PASS");
  RunPair("tcp", "UCX_TLS=tcp");
  RunPair("sm", "UCX_TLS=sm");
  RunPair(nullptr, "UCX_TLS unset");
  return g_failures ? 1 : 0;
}
