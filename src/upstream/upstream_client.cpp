#include "upstream/upstream_client.h"

namespace tempered::upstream {

httplib::Client upstream_client(const UpstreamAddress& address, const std::string& api_key,
                                std::chrono::seconds timeout) {
    httplib::Client client(address.scheme_host_port);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    if (!api_key.empty()) client.set_bearer_token_auth(api_key);
    client.enable_server_certificate_verification(true);
    if (!address.ca_file.empty()) client.set_ca_cert_path(address.ca_file);
    return client;
}

}  // namespace tempered::upstream
