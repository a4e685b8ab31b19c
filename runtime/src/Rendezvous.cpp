//===- Rendezvous.cpp - Processes of one node meeting on a socket -------===//

#include "mosaic/Runtime/Rendezvous.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace mosaic::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// A non-negative integer variable, or an error naming it.
Expected<unsigned long> integerVariable(const char *name) {
  std::string text = environment(name);
  if (text.empty())
    return Error{std::string("the multi-process form needs ") + name +
                 " (as torchrun sets it), which is unset"};
  char *end = nullptr;
  errno = 0;
  unsigned long value = std::strtoul(text.c_str(), &end, 10);
  if (errno || *end || text[0] == '-')
    return Error{std::string(name) + " is \"" + text +
                 "\", expected a non-negative integer"};
  return value;
}

std::string systemError(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

/// The header of every message: the rank whose contribution it carries,
/// the length of the bytes that follow, and whether a descriptor rides
/// along (SCM_RIGHTS, with the header).
struct Header {
  uint32_t rank;
  uint32_t length;
  uint32_t hasFd;
};

/// Milliseconds left until `deadline`, at least 0.
int remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

/// Waits until `socket` is readable; an error after `deadline`.
Status waitReadable(int socket, Clock::time_point deadline,
                    const std::string &who) {
  for (;;) {
    pollfd entry{socket, POLLIN, 0};
    int ready = ::poll(&entry, 1, remaining(deadline));
    if (ready > 0)
      return Status();
    if (ready == 0)
      return Error{who + " sent nothing before the timeout"};
    if (errno != EINTR)
      return Error{systemError("poll on the connection to " + who)};
  }
}

Status sendMessage(int socket, const Header &header, const std::string &bytes,
                   int fd, const std::string &who) {
  iovec part{const_cast<Header *>(&header), sizeof(header)};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(rights), &fd, sizeof(int));
  }
  if (::sendmsg(socket, &message, MSG_NOSIGNAL) != sizeof(header))
    return Error{systemError("sending to " + who)};
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n =
        ::send(socket, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Error{systemError("sending to " + who)};
    sent += static_cast<size_t>(n);
  }
  return Status();
}

/// Reads exactly `size` bytes; the first read also takes a descriptor.
Status receiveExactly(int socket, void *data, size_t size, int *fd,
                      Clock::time_point deadline, const std::string &who) {
  size_t got = 0;
  while (got < size) {
    MOSAIC_RETURN_IF_ERROR(waitReadable(socket, deadline, who));
    iovec part{static_cast<char *>(data) + got, size - got};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd) {
      message.msg_control = control;
      message.msg_controllen = sizeof(control);
    }
    ssize_t n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error{systemError("receiving from " + who)};
    if (n == 0)
      return Error{who + " closed its connection (did it exit?)"};
    if (fd)
      for (cmsghdr *c = CMSG_FIRSTHDR(&message); c;
           c = CMSG_NXTHDR(&message, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
          std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    fd = nullptr;
    got += static_cast<size_t>(n);
  }
  return Status();
}

struct Received {
  Header header;
  Contribution contribution;
};

Expected<Received> receiveMessage(int socket, Clock::time_point deadline,
                                  const std::string &who) {
  Received received{};
  int fd = -1;
  MOSAIC_RETURN_IF_ERROR(receiveExactly(socket, &received.header,
                                        sizeof(Header), &fd, deadline, who));
  received.contribution.fd = fd;
  received.contribution.bytes.resize(received.header.length);
  Status body = receiveExactly(socket, received.contribution.bytes.data(),
                               received.header.length, nullptr, deadline, who);
  if (!body.ok()) {
    if (fd >= 0)
      ::close(fd);
    return Error{body.message()};
  }
  return received;
}

std::string rankName(unsigned rank) { return "rank " + std::to_string(rank); }

} // namespace

Expected<ProcessGroupOptions> ProcessGroupOptions::fromEnvironment() {
  ProcessGroupOptions options;
  Expected<unsigned long> rank = integerVariable("RANK");
  MOSAIC_RETURN_IF_ERROR(rank);
  Expected<unsigned long> world = integerVariable("WORLD_SIZE");
  MOSAIC_RETURN_IF_ERROR(world);
  Expected<unsigned long> local = integerVariable("LOCAL_RANK");
  MOSAIC_RETURN_IF_ERROR(local);
  if (*world == 0 || *rank >= *world)
    return Error{"RANK is " + std::to_string(*rank) + ", WORLD_SIZE " +
                 std::to_string(*world) + ": RANK must be below WORLD_SIZE"};
  if (!environment("LOCAL_WORLD_SIZE").empty()) {
    Expected<unsigned long> localWorld = integerVariable("LOCAL_WORLD_SIZE");
    MOSAIC_RETURN_IF_ERROR(localWorld);
    if (*localWorld != *world)
      return Error{"LOCAL_WORLD_SIZE is " + std::to_string(*localWorld) +
                   " but WORLD_SIZE is " + std::to_string(*world) +
                   ": the multi-process form runs on one node (across "
                   "nodes, see NVSHMEM in docs/RationaleMultiDevice.md)"};
  }
  options.rank = static_cast<unsigned>(*rank);
  options.worldSize = static_cast<unsigned>(*world);
  options.ordinal = static_cast<int>(*local);
  options.rendezvous = environment("MOSAIC_GPU_RENDEZVOUS");
  if (options.rendezvous.empty()) {
    std::string job = environment("TORCHELASTIC_RUN_ID");
    if (job.empty())
      job = environment("MASTER_PORT");
    if (job.empty())
      return Error{"the multi-process form needs a rendezvous path: set "
                   "MOSAIC_GPU_RENDEZVOUS, or TORCHELASTIC_RUN_ID or "
                   "MASTER_PORT (torchrun sets both) to derive one"};
    std::string directory = environment("TMPDIR");
    if (directory.empty())
      directory = "/tmp";
    options.rendezvous = directory + "/mosaic-gpu-" +
                         std::to_string(::getuid()) + "-" + job + ".sock";
  }
  if (!environment("MOSAIC_GPU_RENDEZVOUS_TIMEOUT").empty()) {
    Expected<unsigned long> seconds =
        integerVariable("MOSAIC_GPU_RENDEZVOUS_TIMEOUT");
    MOSAIC_RETURN_IF_ERROR(seconds);
    options.timeout = std::chrono::seconds(*seconds);
  }
  return options;
}

Expected<std::unique_ptr<Rendezvous>>
Rendezvous::connect(const ProcessGroupOptions &options) {
  const std::string &path = options.rendezvous;
  std::string where = "rendezvous at " + path;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path))
    return Error{where + ": the path must have 1 to " +
                 std::to_string(sizeof(address.sun_path) - 1) + " bytes"};
  if (options.worldSize == 0 || options.rank >= options.worldSize)
    return Error{where + ": rank " + std::to_string(options.rank) +
                 " of a group of " + std::to_string(options.worldSize)};
  std::memcpy(address.sun_path, path.c_str(), path.size());
  std::unique_ptr<Rendezvous> result(new Rendezvous(options));
  Clock::time_point deadline = Clock::now() + options.timeout;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g s",
                options.timeout.count() / 1000.0);

  if (options.rank == 0) {
    result->sockets.assign(options.worldSize, -1);
    if (options.worldSize == 1)
      return result;
    int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0)
      return Error{systemError(where + ": socket")};
    ::unlink(path.c_str()); // A socket left by an earlier run of the job.
    if (::bind(listener, reinterpret_cast<sockaddr *>(&address),
               sizeof(address)) != 0 ||
        ::listen(listener, static_cast<int>(options.worldSize)) != 0) {
      Error error{systemError(where + ": bind")};
      ::close(listener);
      return error;
    }
    unsigned waiting = options.worldSize - 1;
    Status status;
    while (waiting && status.ok()) {
      pollfd entry{listener, POLLIN, 0};
      int ready = ::poll(&entry, 1, remaining(deadline));
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready <= 0) {
        std::string missing;
        for (unsigned r = 1; r < options.worldSize; ++r)
          if (result->sockets[r] < 0)
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        status = Error{where + ": rank 0 waited " + seconds + " for rank" +
                       (waiting > 1 ? "s " : " ") + missing + " of " +
                       std::to_string(options.worldSize) +
                       ", which never connected"};
        break;
      }
      int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (peer < 0)
        continue;
      Expected<Received> hello =
          receiveMessage(peer, deadline, "a process connecting to " + where);
      if (!hello.ok()) {
        ::close(peer);
        status = Error{hello.message()};
        break;
      }
      uint32_t rank = hello->header.rank;
      if (rank == 0 || rank >= options.worldSize ||
          result->sockets[rank] >= 0 ||
          hello->contribution.bytes != std::to_string(options.worldSize)) {
        ::close(peer);
        status = Error{where + ": a process connected as rank " +
                       std::to_string(rank) + " of a group of " +
                       hello->contribution.bytes + ", but this group has " +
                       std::to_string(options.worldSize) +
                       " ranks and rank 0 expected each other rank once"};
        break;
      }
      result->sockets[rank] = peer;
      --waiting;
    }
    ::close(listener);
    ::unlink(path.c_str());
    if (!status.ok())
      return Error{status.message()};
    return result;
  }

  for (;;) {
    int peer = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (peer < 0)
      return Error{systemError(where + ": socket")};
    if (::connect(peer, reinterpret_cast<sockaddr *>(&address),
                  sizeof(address)) == 0) {
      result->sockets.push_back(peer);
      break;
    }
    ::close(peer);
    if (Clock::now() >= deadline)
      return Error{where + ": " + rankName(options.rank) + " waited " +
                   seconds + " for rank 0, which never opened it"};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Header hello{options.rank, 0, 0};
  std::string size = std::to_string(options.worldSize);
  hello.length = static_cast<uint32_t>(size.size());
  MOSAIC_RETURN_IF_ERROR(
      sendMessage(result->sockets[0], hello, size, -1, "rank 0 at " + where));
  return result;
}

Rendezvous::~Rendezvous() {
  for (int socket : sockets)
    if (socket >= 0)
      ::close(socket);
}

Expected<std::vector<Contribution>>
Rendezvous::allGather(const std::string &bytes, int fd) {
  unsigned world = options.worldSize;
  std::vector<Contribution> all(world);
  all[options.rank] = {bytes, fd};
  Clock::time_point deadline = Clock::now() + options.timeout;
  std::string where = " (rendezvous at " + options.rendezvous + ")";
  auto closeReceived = [&] {
    for (unsigned r = 0; r < world; ++r)
      if (r != options.rank && all[r].fd >= 0)
        ::close(all[r].fd);
  };
  Header header{options.rank, static_cast<uint32_t>(bytes.size()),
                fd >= 0 ? 1u : 0u};
  if (options.rank == 0) {
    Status status;
    for (unsigned r = 1; r < world && status.ok(); ++r) {
      Expected<Received> got =
          receiveMessage(sockets[r], deadline, rankName(r) + where);
      if (!got.ok())
        status = Error{got.message()};
      else
        all[r] = std::move(got->contribution);
    }
    for (unsigned r = 1; r < world && status.ok(); ++r)
      for (unsigned from = 0; from < world && status.ok(); ++from) {
        Header forward{from, static_cast<uint32_t>(all[from].bytes.size()),
                       all[from].fd >= 0 ? 1u : 0u};
        status = sendMessage(sockets[r], forward, all[from].bytes, all[from].fd,
                             rankName(r) + where);
      }
    if (!status.ok()) {
      closeReceived();
      return Error{status.message()};
    }
    return all;
  }
  MOSAIC_RETURN_IF_ERROR(
      sendMessage(sockets[0], header, bytes, fd, rankName(0) + where));
  for (unsigned i = 0; i < world; ++i) {
    Expected<Received> got =
        receiveMessage(sockets[0], deadline, rankName(0) + where);
    if (!got.ok()) {
      closeReceived();
      return Error{got.message()};
    }
    unsigned from = got->header.rank;
    if (from >= world) {
      closeReceived();
      return Error{"rank 0 forwarded a message of rank " +
                   std::to_string(from) + where};
    }
    if (from == options.rank) { // Our own descriptor, sent back.
      if (got->contribution.fd >= 0)
        ::close(got->contribution.fd);
      continue;
    }
    all[from] = std::move(got->contribution);
  }
  return all;
}

} // namespace mosaic::runtime
