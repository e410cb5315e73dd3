#include "common/wire/lan_auth.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/io/file.h"
#include "common/logging.h"
#include "common/status.h"

namespace warp {
namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenFileBytes = 64 << 10;
constexpr auto kRecheckEvery = std::chrono::seconds(1);

absl::StatusOr<int64_t> ModifiedNs(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return ErrnoToStatus(errno, path);
  return int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec;
}

// The client's side of the token: the metadata of every call.
class TokenPlugin : public grpc::MetadataCredentialsPlugin {
 public:
  explicit TokenPlugin(std::string token) : value_(std::string(kTokenPrefix) + token) {}
  bool IsBlocking() const override { return false; }
  const char* GetType() const override { return "warp-token"; }
  grpc::Status GetMetadata(grpc::string_ref, grpc::string_ref, const grpc::AuthContext&,
                           std::multimap<std::string, std::string>* metadata) override {
    metadata->emplace(std::string(kTokenMetadataKey), value_);
    return grpc::Status::OK;
  }

 private:
  const std::string value_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  WARP_RETURN_IF_ERROR(CheckSecretFile(path, "token file"));
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return Annotate(text.status(), "token file");
  if (text->size() > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, ": ", text->size(), " bytes; at most 64 KiB expected"));
  }
  std::vector<std::string> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    for (const char c : line) {
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token file ", path, " line ", line_number,
            ": a token is printable ASCII without spaces (e.g. `openssl rand -hex 32`)"));
      }
    }
    if (line.size() < kMinTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token file ", path, " line ", line_number, ": ", line.size(),
          " bytes; a token needs at least ", kMinTokenBytes, " (e.g. `openssl rand -hex 32`)"));
    }
    tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, ": no token in it"));
  }
  return tokens;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view flag) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return Annotate(text.status(), std::string(flag));
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(flag), " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return *std::move(text);
}

namespace {

std::string ModeText(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", mode);
  return text;
}

}  // namespace

absl::Status CheckSecretFile(const std::string& path, std::string_view what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return Annotate(ErrnoToStatus(errno, path), std::string(what));
  }
  const std::string name = absl::StrCat(std::string(what), " ", path);
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a regular file"));
  }
  const unsigned mode = info.st_mode & 07777;
  if ((mode & 0007) != 0 || (mode & 0020) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        name, ": mode ", ModeText(mode), " lets other users ",
        (mode & 0022) != 0 ? "change" : "read", " it; chmod 600 ", path,
        " (or 640 with a service group), as ssh requires of a private key"));
  }
  if (info.st_uid != ::geteuid() && info.st_uid != 0) {
    return absl::PermissionDeniedError(absl::StrCat(name, ": belongs to user ", info.st_uid,
                                                    ", not to this process's (", ::geteuid(),
                                                    ") or root"));
  }
  return absl::OkStatus();
}

namespace {

std::string AsnTimeText(const ASN1_TIME* time) {
  BIO* bio = BIO_new(BIO_s_mem());
  ASN1_TIME_print(bio, time);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(size));
  BIO_free(bio);
  return text;
}

}  // namespace

absl::Status CheckCertificateAndKey(const std::string& cert_pem, const std::string& key_pem,
                                    std::string_view cert_flag, const std::string& cert_path,
                                    std::string_view key_flag, const std::string& key_path) {
  const std::string cert_name = absl::StrCat(std::string(cert_flag), " ", cert_path);
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(cert_name, ": no certificate in it"));
  }
  absl::Status status;
  const time_t now = std::time(nullptr);
  if (X509_cmp_time(X509_get0_notAfter(cert), nullptr) < 0) {
    status = absl::InvalidArgumentError(absl::StrCat(
        cert_name, ": the certificate expired on ", AsnTimeText(X509_get0_notAfter(cert)),
        "; clients would refuse it (certificate verify failed). Renew it"));
  } else if (X509_cmp_time(X509_get0_notBefore(cert), nullptr) > 0) {
    status = absl::InvalidArgumentError(
        absl::StrCat(cert_name, ": the certificate is not valid before ",
                     AsnTimeText(X509_get0_notBefore(cert)), " (is this machine's clock right?)"));
  } else {
    time_t soon = now + 14 * 24 * 3600;
    if (X509_cmp_time(X509_get0_notAfter(cert), &soon) < 0) {
      Logger("lan").warn("{}: the certificate expires on {}", cert_name,
                         AsnTimeText(X509_get0_notAfter(cert)));
    }
    BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    BIO_free(key_bio);
    if (key == nullptr) {
      status = absl::InvalidArgumentError(absl::StrCat(
          std::string(key_flag), " ", key_path, ": no private key in it (or it is encrypted)"));
    } else if (X509_check_private_key(cert, key) != 1) {
      status = absl::InvalidArgumentError(absl::StrCat(std::string(key_flag), " ", key_path,
                                                       ": not the private key of ", cert_name));
    }
    EVP_PKEY_free(key);
  }
  X509_free(cert);
  return status;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  // Every byte of the longer one is visited, whatever matches.
  const size_t n = std::max(a.size(), b.size());
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    differ |= x ^ y;
  }
  return differ == 0;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // 127.0.0.0/8 as a dotted address (a name such as 127.example.com is not one).
  return host.starts_with("127.") &&
         host.find_first_not_of("0123456789.") == std::string_view::npos;
}

std::string_view HostOfHostPort(std::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  return colon == std::string_view::npos ? host_port : host_port.substr(0, colon);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> TlsChannelCredentials(
    const TlsClientFiles& files) {
  if (files.ca.empty()) return absl::InvalidArgumentError("a tls: store needs --tls-ca");
  if (files.token_file.empty())
    return absl::InvalidArgumentError("a tls: store needs --token-file");
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  grpc::SslCredentialsOptions ssl;
  WARP_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(files.ca, "--tls-ca"));
  if (!files.cert.empty()) {
    WARP_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPemFile(files.cert, "--tls-cert"));
    WARP_RETURN_IF_ERROR(CheckSecretFile(files.key, "--tls-key"));
    WARP_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPemFile(files.key, "--tls-key"));
    WARP_RETURN_IF_ERROR(CheckCertificateAndKey(ssl.pem_cert_chain, ssl.pem_private_key,
                                                "--tls-cert", files.cert, "--tls-key", files.key));
  }
  WARP_ASSIGN_OR_RETURN(std::vector<std::string> tokens, ReadTokenFile(files.token_file));
  return grpc::CompositeChannelCredentials(
      grpc::SslCredentials(ssl),
      grpc::MetadataCredentialsFromPlugin(std::make_unique<TokenPlugin>(tokens.front())));
}

absl::StatusOr<std::shared_ptr<TokenChecker>> TokenChecker::Open(const std::string& path) {
  WARP_ASSIGN_OR_RETURN(std::vector<std::string> tokens, ReadTokenFile(path));
  WARP_ASSIGN_OR_RETURN(const int64_t mtime, ModifiedNs(path));
  auto checker = std::shared_ptr<TokenChecker>(new TokenChecker(path));
  absl::MutexLock lock(&checker->mutex_);
  checker->tokens_ = std::move(tokens);
  checker->mtime_ns_ = mtime;
  checker->checked_ = std::chrono::steady_clock::now();
  return checker;
}

void TokenChecker::ReloadIfChanged() {
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_ < kRecheckEvery) return;
  checked_ = now;
  const absl::StatusOr<int64_t> mtime = ModifiedNs(path_);
  if (mtime.ok() && *mtime == mtime_ns_) return;
  // A file being rewritten, or gone, keeps the tokens of the last good read.
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path_);
  if (!mtime.ok() || !tokens.ok()) {
    Logger("expertd").warn("keeping the tokens read before: {}",
                           std::string((mtime.ok() ? tokens.status() : mtime.status()).message()));
    return;
  }
  tokens_ = *std::move(tokens);
  mtime_ns_ = *mtime;
  Logger("expertd").info("token file {} read again: {} token(s)", path_, tokens_.size());
}

bool TokenChecker::Accepts(std::string_view token) {
  absl::MutexLock lock(&mutex_);
  ReloadIfChanged();
  bool accepted = false;
  for (const std::string& known : tokens_) accepted |= TokensEqual(token, known);
  return accepted;
}

grpc::Status TokenChecker::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                   OutputMetadata* consumed_auth_metadata, OutputMetadata*) {
  const auto found =
      auth_metadata.find(grpc::string_ref(kTokenMetadataKey.data(), kTokenMetadataKey.size()));
  if (found == auth_metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "no token: a client of this daemon needs --token-file");
  }
  const std::string_view value(found->second.data(), found->second.size());
  if (!value.starts_with(kTokenPrefix) || !Accepts(value.substr(kTokenPrefix.size()))) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "wrong token: not one of the daemon's --token-file");
  }
  consumed_auth_metadata->emplace(std::string(kTokenMetadataKey), std::string(value));
  return grpc::Status::OK;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsServerFiles& files) {
  grpc::SslServerCredentialsOptions ssl(
      files.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  WARP_ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(files.cert, "--tls-cert"));
  WARP_RETURN_IF_ERROR(CheckSecretFile(files.key, "--tls-key"));
  WARP_ASSIGN_OR_RETURN(pair.private_key, ReadPemFile(files.key, "--tls-key"));
  WARP_RETURN_IF_ERROR(CheckCertificateAndKey(pair.cert_chain, pair.private_key, "--tls-cert",
                                              files.cert, "--tls-key", files.key));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!files.client_ca.empty()) {
    WARP_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(files.client_ca, "--tls-client-ca"));
  }
  WARP_ASSIGN_OR_RETURN(std::shared_ptr<TokenChecker> checker,
                        TokenChecker::Open(files.token_file));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(ssl);
  credentials->SetAuthMetadataProcessor(std::move(checker));
  return credentials;
}

}  // namespace warp
