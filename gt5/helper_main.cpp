// kite-gt5-helper: the one process of Kite that links the Globus libraries (docs/grid-gt5.md).
// The gridmanager's GRAM5 link starts one per site and speaks to it in lines (grid/gt5_format.h):
// requests on stdin, answers on stdout, in any order, matched by their number. Each request runs
// on a thread of its own pool with GRAM's blocking client calls, so a slow gatekeeper holds up
// only the requests sent to it. The Globus libraries keep their own threads and globals; in a
// process of their own they cannot reach the gridmanager's.
//
// The helper also serves the job's files to the site's job managers over GASS (HTTPS with GSI):
// only the files the link has named (ALLOW), each under an opaque name, read-only or write-only,
// and only to clients holding the user's own identity (a proxy the user delegated). A site asking
// for anything else is refused: a site can neither read the desktop's files nor write them beyond
// the outputs of its own jobs.
#include <globus/globus_gass_transfer.h>
#include <globus/globus_gram_client.h>
#include <globus/globus_gram_protocol.h>
#include <globus/globus_gss_assist.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grid/gt5_wire.h"

// Globus's TCP driver binds its listeners without SO_REUSEADDR, and the GASS transfer API has no
// way to ask for it. A helper started again after one that was killed with connections open
// could then not have its port back for a minute (the old connections wait in TIME_WAIT), and
// every URL the sites' job managers hold would fail. This bind, exported to the Globus libraries
// in place of libc's (gt5/CMakeLists.txt), sets SO_REUSEADDR on stream sockets first; two
// listeners still cannot share a port, so a helper that is still alive keeps its own.
extern "C" int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  using Bind = int (*)(int, const struct sockaddr*, socklen_t);
  static const auto real = reinterpret_cast<Bind>(dlsym(RTLD_NEXT, "bind"));
  int type = 0;
  socklen_t type_len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM) {
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  return real(fd, addr, len);
}

namespace {

using kite::grid::gt5::JoinLine;
using kite::grid::gt5::SplitLine;

std::mutex out_mu;

void Say(const std::vector<std::string>& fields) {
  std::string line = JoinLine(fields);
  std::lock_guard lock(out_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string GramError(int code) {
  const char* s = globus_gram_client_error_string(code);
  return s ? s : "GRAM error " + std::to_string(code);
}

void Err(const std::string& id, int code, const std::string& why) {
  Say({id, "ERR", std::to_string(code), why});
}

// --- credentials ------------------------------------------------------------------------------

std::mutex cred_mu;
gss_cred_id_t current_cred = GSS_C_NO_CREDENTIAL;

// Loads the proxy at `path` and makes it the one every later call presents. "" on success.
std::string UseProxy(const std::string& path) {
  setenv("X509_USER_PROXY", path.c_str(), 1);
  OM_uint32 minor = 0;
  gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
  OM_uint32 major = globus_gss_assist_acquire_cred(&minor, GSS_C_BOTH, &cred);
  if (major != GSS_S_COMPLETE) {
    char* text = nullptr;
    globus_gss_assist_display_status_str(&text, const_cast<char*>("loading the proxy"), major,
                                         minor, 0);
    std::string why = text ? text : "the proxy could not be loaded";
    free(text);
    for (auto& c : why) {
      if (c == '\n') c = ' ';
    }
    return why;
  }
  std::lock_guard lock(cred_mu);
  int rc = globus_gram_client_set_credentials(cred);
  if (rc != GLOBUS_SUCCESS) return GramError(rc);
  current_cred = cred;  // the client keeps it; the old one stays with jobs refreshed from it
  return "";
}

// --- the GASS server --------------------------------------------------------------------------

struct Allowed {
  char mode = 'R';  // R: the site may read it; W: the site may write it (replacing it)
  std::string path;
};
std::mutex gass_mu;
std::map<std::string, Allowed> allowed;  // by URL path ("/NAME")
std::atomic<int64_t> last_request{0};    // steady-clock seconds of the last GASS request

// Where a completed write of each served file is marked (DIR/NAME, an empty file): the link
// checks that a job's output came back, across restarts of the helper and the gridmanager.
std::string written_dir;

// ... and said ("0 WRITTEN /NAME"): a job waiting for its output is asked again at once.
void MarkWritten(const std::string& target) {
  if (written_dir.empty() || target.size() < 2) return;
  int fd = open((written_dir + target).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  Say({"0", "WRITTEN", target});
}

struct Transfer {
  std::string target;  // the URL path
  int fd = -1;
  std::vector<globus_byte_t> buf = std::vector<globus_byte_t>(256 * 1024);
};

void Finish(Transfer* t, globus_gass_transfer_request_t request) {
  if (t->fd >= 0) close(t->fd);
  delete t;
  globus_gass_transfer_request_destroy(request);
}

void OnSent(void* arg, globus_gass_transfer_request_t request, globus_byte_t*, globus_size_t,
            globus_bool_t last) {
  auto* t = static_cast<Transfer*>(arg);
  if (last ||
      globus_gass_transfer_request_get_status(request) != GLOBUS_GASS_TRANSFER_REQUEST_PENDING) {
    Finish(t, request);
    return;
  }
  ssize_t n = read(t->fd, t->buf.data(), t->buf.size());
  if (n < 0) n = 0;
  globus_gass_transfer_send_bytes(request, t->buf.data(), static_cast<globus_size_t>(n),
                                  n == 0 ? GLOBUS_TRUE : GLOBUS_FALSE, OnSent, t);
}

void OnReceived(void* arg, globus_gass_transfer_request_t request, globus_byte_t* bytes,
                globus_size_t length, globus_bool_t last) {
  auto* t = static_cast<Transfer*>(arg);
  size_t done = 0;
  while (done < length) {
    ssize_t n = write(t->fd, bytes + done, length - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  auto status = globus_gass_transfer_request_get_status(request);
  if (last || status != GLOBUS_GASS_TRANSFER_REQUEST_PENDING) {
    fsync(t->fd);
    // The whole body is here (an empty one may end as DONE without a last piece).
    if (last || status == GLOBUS_GASS_TRANSFER_REQUEST_DONE) MarkWritten(t->target);
    Finish(t, request);
    return;
  }
  globus_gass_transfer_receive_bytes(request, t->buf.data(), t->buf.size(), 1, OnReceived, t);
}

void OnListen(void*, globus_gass_transfer_listener_t listener);

void Serve(globus_gass_transfer_request_t request);

void OnRequest(void* arg, globus_gass_transfer_request_t request) {
  Serve(request);
  globus_gass_transfer_register_listen(
      static_cast<globus_gass_transfer_listener_t>(reinterpret_cast<intptr_t>(arg)), OnListen,
      nullptr);
}

void Serve(globus_gass_transfer_request_t request) {
  const char* url = globus_gass_transfer_request_get_url(request);
  std::string target = url ? url : "";
  // The URL as the client sent it: "https://HOST:PORT/NAME" or just "/NAME".
  if (auto scheme = target.find("://"); scheme != std::string::npos) {
    auto slash = target.find('/', scheme + 3);
    target = slash == std::string::npos ? "/" : target.substr(slash);
  }
  last_request = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count();
  auto type = globus_gass_transfer_request_get_type(request);
  Allowed a;
  {
    std::lock_guard lock(gass_mu);
    auto it = allowed.find(target);
    if (it == allowed.end()) {
      globus_gass_transfer_deny(request, 404, const_cast<char*>("not a file of Kite's jobs"));
      globus_gass_transfer_request_destroy(request);
      return;
    }
    a = it->second;
  }
  bool get = type == GLOBUS_GASS_TRANSFER_REQUEST_TYPE_GET;
  bool put = type == GLOBUS_GASS_TRANSFER_REQUEST_TYPE_PUT ||
             type == GLOBUS_GASS_TRANSFER_REQUEST_TYPE_APPEND;
  if ((get && a.mode != 'R') || (put && a.mode != 'W') || (!get && !put)) {
    globus_gass_transfer_deny(request, 403, const_cast<char*>("not allowed on this file"));
    globus_gass_transfer_request_destroy(request);
    return;
  }
  auto* t = new Transfer;
  t->target = target;
  if (get) {
    t->fd = open(a.path.c_str(), O_RDONLY | O_CLOEXEC);
  } else {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    flags |= type == GLOBUS_GASS_TRANSFER_REQUEST_TYPE_APPEND ? O_APPEND : O_TRUNC;
    t->fd = open(a.path.c_str(), flags, 0644);
  }
  if (t->fd < 0) {
    globus_gass_transfer_deny(request, 404, const_cast<char*>("the file cannot be opened"));
    Finish(t, request);
    return;
  }
  if (get) {
    off_t size = lseek(t->fd, 0, SEEK_END);
    lseek(t->fd, 0, SEEK_SET);
    globus_gass_transfer_authorize(request, static_cast<globus_size_t>(size < 0 ? 0 : size));
    OnSent(t, request, nullptr, 0, GLOBUS_FALSE);
  } else {
    globus_gass_transfer_authorize(request, 0);
    globus_gass_transfer_receive_bytes(request, t->buf.data(), t->buf.size(), 1, OnReceived, t);
  }
}

void OnListen(void*, globus_gass_transfer_listener_t listener) {
  globus_gass_transfer_requestattr_t attr;
  globus_gass_transfer_requestattr_init(&attr, const_cast<char*>("https"));
  globus_gass_transfer_secure_requestattr_set_authorization(
      &attr, GLOBUS_GASS_TRANSFER_AUTHORIZE_SELF, nullptr);
  globus_gass_transfer_request_t request;
  // The next listen is registered once this accept has completed (OnRequest): a listener takes
  // one at a time.
  globus_gass_transfer_register_accept(&request, &attr, listener, OnRequest,
                                       reinterpret_cast<void*>(static_cast<intptr_t>(listener)));
  globus_gass_transfer_requestattr_destroy(&attr);
}

// Starts the GASS listener on `port` (0: any); returns its base URL, "" when it cannot listen.
std::string StartGass(unsigned short port) {
  globus_gass_transfer_listenerattr_t attr;
  globus_gass_transfer_listenerattr_init(&attr, const_cast<char*>("https"));
  if (port != 0) globus_gass_transfer_listenerattr_set_port(&attr, port);
  globus_gass_transfer_listener_t listener;
  int rc = globus_gass_transfer_create_listener(&listener, &attr, const_cast<char*>("https"));
  globus_object_free(attr);  // the library exports no listenerattr_destroy
  if (rc != GLOBUS_SUCCESS) return "";
  const char* base = globus_gass_transfer_listener_get_base_url(listener);
  std::string url = base ? base : "";
  if (globus_gass_transfer_register_listen(listener, OnListen, nullptr) != GLOBUS_SUCCESS)
    return "";
  return url;
}

// --- callbacks --------------------------------------------------------------------------------

// Where job managers send state changes; given with every submit and restart (a job manager that
// reloads a job registers the restarting client's contact, and cannot be given none).
std::string callback_contact;

// A job manager's news, passed on as "0 EVENT CONTACT STATE ERROR".
void OnCallback(void*, char* job_contact, int state, int error) {
  Say({"0", "EVENT", job_contact ? job_contact : "", std::to_string(state), std::to_string(error)});
}

// --- requests ---------------------------------------------------------------------------------

void Handle(const std::vector<std::string>& f) {
  const std::string& id = f[0];
  const std::string& verb = f.size() > 1 ? f[1] : "";
  auto arg = [&](size_t i) -> const std::string& {
    static const std::string none;
    return f.size() > i ? f[i] : none;
  };
  int rc = 0;
  if (verb == "SUBMIT") {  // SUBMIT GATEKEEPER RSL
    char* contact = nullptr;
    rc = globus_gram_client_job_request(arg(2).c_str(), arg(3).c_str(),
                                        GLOBUS_GRAM_PROTOCOL_JOB_STATE_ALL,
                                        callback_contact.c_str(), &contact);
    if ((rc == GLOBUS_SUCCESS || rc == GLOBUS_GRAM_PROTOCOL_ERROR_WAITING_FOR_COMMIT) && contact) {
      Say({id, "OK", contact, std::to_string(rc)});
      globus_gram_client_job_contact_free(contact);
      return;
    }
    if (contact) globus_gram_client_job_contact_free(contact);
    if (rc == GLOBUS_SUCCESS) rc = GLOBUS_GRAM_PROTOCOL_ERROR_PROTOCOL_FAILED;
  } else if (verb == "COMMIT" || verb == "END") {  // COMMIT CONTACT, END CONTACT
    int state = 0, failure = 0;
    auto signal = verb == "COMMIT" ? GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_COMMIT_REQUEST
                                   : GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_COMMIT_END;
    rc = globus_gram_client_job_signal(arg(2).c_str(), signal, nullptr, &state, &failure);
    if (rc == GLOBUS_SUCCESS) {
      Say({id, "OK", std::to_string(state), std::to_string(failure)});
      return;
    }
  } else if (verb == "STATUS") {  // STATUS CONTACT -> OK STATE ERROR EXIT|-
    globus_gram_client_job_info_t info;
    std::memset(&info, 0, sizeof info);
    rc = globus_gram_client_job_status_with_info(arg(2).c_str(), &info);
    if (rc == GLOBUS_SUCCESS) {
      // The job's own failure and exit code come as protocol extensions.
      auto ext = [&](const char* name) -> std::string {
        auto* e = static_cast<globus_gram_protocol_extension_t*>(
            globus_hashtable_lookup(&info.extensions, const_cast<char*>(name)));
        return e && e->value ? e->value : "";
      };
      std::string exit = ext("exit-code");
      if (exit.empty()) exit = "-";
      int error = info.protocol_error_code;
      if (std::string jf = ext("job-failure-code"); !jf.empty()) error = std::atoi(jf.c_str());
      std::string why = ext("gt3-failure-message");
      if (why.empty() && error != 0) why = GramError(error);
      Say({id, "OK", std::to_string(info.job_state), std::to_string(error), exit, why});
      globus_gram_client_job_info_destroy(&info);
      return;
    }
    globus_gram_client_job_info_destroy(&info);
  } else if (verb == "STOP") {  // STOP CONTACT: the job manager exits, keeping the job's state
    int state = 0, failure = 0;
    rc = globus_gram_client_job_signal(arg(2).c_str(), GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_STOP_MANAGER,
                                       nullptr, &state, &failure);
    if (rc == GLOBUS_SUCCESS) {
      Say({id, "OK"});
      return;
    }
  } else if (verb == "STDIO") {  // STDIO CONTACT RSL: new stdout/stderr URLs (the GASS moved)
    int state = 0, failure = 0;
    rc = globus_gram_client_job_signal(arg(2).c_str(), GLOBUS_GRAM_PROTOCOL_JOB_SIGNAL_STDIO_UPDATE,
                                       arg(3).c_str(), &state, &failure);
    if (rc == GLOBUS_SUCCESS) {
      Say({id, "OK"});
      return;
    }
  } else if (verb == "CANCEL") {
    rc = globus_gram_client_job_cancel(arg(2).c_str());
    if (rc == GLOBUS_SUCCESS) {
      Say({id, "OK"});
      return;
    }
  } else if (verb == "REFRESH") {  // REFRESH CONTACT: the job manager gets the current proxy
    gss_cred_id_t cred;
    {
      std::lock_guard lock(cred_mu);
      cred = current_cred;
    }
    std::string contact = arg(2);
    rc = globus_gram_client_job_refresh_credentials(contact.data(), cred);
    if (rc == GLOBUS_SUCCESS) {
      Say({id, "OK"});
      return;
    }
  } else if (verb == "PROXY") {  // PROXY PATH
    std::string why = UseProxy(arg(2));
    if (why.empty()) {
      Say({id, "OK"});
    } else {
      Err(id, GLOBUS_GRAM_PROTOCOL_ERROR_USER_PROXY_NOT_FOUND, why);
    }
    return;
  } else if (verb == "ALLOW") {  // ALLOW R|W NAME PATH
    if ((arg(2) != "R" && arg(2) != "W") || arg(3).empty() || arg(4).empty() || arg(4)[0] != '/') {
      Err(id, GLOBUS_GRAM_PROTOCOL_ERROR_BAD_RSL, "ALLOW takes R|W NAME /PATH");
      return;
    }
    std::lock_guard lock(gass_mu);
    allowed["/" + arg(3)] = Allowed{arg(2)[0], arg(4)};
    Say({id, "OK"});
    return;
  } else if (verb == "FORGET") {  // FORGET NAME
    std::lock_guard lock(gass_mu);
    allowed.erase("/" + arg(2));
    if (!written_dir.empty() && !arg(2).empty() && arg(2).find('/') == std::string::npos) {
      unlink((written_dir + "/" + arg(2)).c_str());
    }
    Say({id, "OK"});
    return;
  } else {
    Err(id, GLOBUS_GRAM_PROTOCOL_ERROR_BAD_RSL, "unknown request '" + verb + "'");
    return;
  }
  Err(id, rc, GramError(rc));
}

// A fixed pool of threads runs the requests.
std::mutex q_mu;
std::condition_variable q_cv;
std::deque<std::vector<std::string>> queue;
bool closing = false;

void Worker() {
  for (;;) {
    std::vector<std::string> f;
    {
      std::unique_lock lock(q_mu);
      q_cv.wait(lock, [] { return closing || !queue.empty(); });
      if (queue.empty()) return;
      f = std::move(queue.front());
      queue.pop_front();
    }
    Handle(f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(stderr,
                 "usage: kite-gt5-helper PROXY [GASS_PORT [WRITTEN_DIR]]\n"
                 "Started by kite-gridmanager for each GRAM5 site (docs/grid-gt5.md); speaks "
                 "its line protocol on stdin and stdout.\n");
    return argc < 2 ? 2 : 0;
  }
  // Answers written after the gridmanager has gone fail quietly (EPIPE) instead of ending the
  // helper, whose file server must outlive it; SIGTERM (from the next helper for this site, which
  // takes over the port) ends it at once.
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, [](int) { std::_Exit(0); });
  // Threads for Globus's callbacks (its default model has none: callbacks would then run only
  // inside a blocking call, and the GASS server would never answer between them).
  globus_thread_set_model("pthread");
  // The client takes its first credential from the environment when it starts.
  setenv("X509_USER_PROXY", argv[1], 1);
  if (globus_module_activate(GLOBUS_GRAM_CLIENT_MODULE) != GLOBUS_SUCCESS ||
      globus_module_activate(GLOBUS_GASS_TRANSFER_MODULE) != GLOBUS_SUCCESS) {
    Say({"0", "FATAL", "the Globus GRAM client could not start"});
    return 1;
  }
  if (std::string why = UseProxy(argv[1]); !why.empty()) {
    Say({"0", "FATAL", why});
    return 1;
  }
  unsigned short port = argc > 2 ? static_cast<unsigned short>(std::atoi(argv[2])) : 0;
  if (argc > 3) written_dir = argv[3];
  // The port of the helper before this one, so that the URLs the sites' job managers hold stay
  // good; while that helper still serves them (it outlives its gridmanager), a port of its own.
  std::string gass = StartGass(port);
  if (gass.empty() && port != 0) gass = StartGass(0);
  if (gass.empty()) {
    Say({"0", "FATAL", "the GASS server could not listen"});
    return 1;
  }
  char* cb = nullptr;
  if (globus_gram_client_callback_allow(OnCallback, nullptr, &cb) != GLOBUS_SUCCESS || !cb) {
    Say({"0", "FATAL", "the callback listener could not start"});
    return 1;
  }
  callback_contact = cb;
  free(cb);
  Say({"0", "READY", gass, callback_contact});

  std::vector<std::thread> workers;
  for (int i = 0; i < 8; ++i) workers.emplace_back(Worker);
  std::string line;
  while (std::getline(std::cin, line)) {
    auto f = SplitLine(line);
    if (f.size() < 2) continue;
    std::lock_guard lock(q_mu);
    queue.push_back(std::move(f));
    q_cv.notify_one();
  }
  {
    std::lock_guard lock(q_mu);
    closing = true;
    queue.clear();  // nobody waits for their answers any more
    q_cv.notify_all();
  }
  for (auto& w : workers) w.detach();  // one may be inside a GRAM call to a site that is slow
  // The gridmanager has gone (ended, or killed): the jobs stay at their sites, and the URLs their
  // job managers hold name this server. While any of them may still fetch or send a file, it stays
  // up (the next gridmanager's helper serves new jobs on a port of its own), until no job
  // manager has asked for anything for 10 minutes.
  bool serving = false;
  {
    std::lock_guard lock(gass_mu);
    serving = !allowed.empty();
  }
  auto now_s = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  if (serving) {
    last_request = std::max<int64_t>(last_request, now_s());
    while (now_s() - last_request < 600) std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  std::_Exit(0);
}
