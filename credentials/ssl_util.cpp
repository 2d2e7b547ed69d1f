// OpenSSL ownership helpers and error text for kite_credentials.
#include "credentials/ssl_util.h"

#include <openssl/err.h>

#include <ctime>

namespace kite::credentials::detail {

BioPtr MemBio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

BioPtr NewMemBio() {
  return BioPtr(BIO_new(BIO_s_mem()));
}

std::string BioToString(BIO* bio) {
  char* p = nullptr;
  long n = BIO_get_mem_data(bio, &p);
  return n > 0 ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::string TakeSslError() {
  unsigned long last = 0;
  // The last queued error is usually the most specific one for PEM and X509 calls.
  while (unsigned long e = ERR_get_error()) last = e;
  if (last == 0) return "unknown OpenSSL error";
  const char* reason = ERR_reason_error_string(last);
  return reason ? reason : "OpenSSL error " + std::to_string(last);
}

std::unexpected<Error> FailSsl(ErrorCode code, std::string_view what) {
  std::string m(what);
  m += ": ";
  m += TakeSslError();
  return Fail(code, std::move(m));
}

std::chrono::system_clock::time_point AsnTimeToClock(const ASN1_TIME* t) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string TimeText(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace kite::credentials::detail
