#ifndef ISSUERD_CCURL_SHIM_H
#define ISSUERD_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift does not import: one typed
   wrapper per argument type. */
static inline CURLcode issuerd_curl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode issuerd_curl_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode issuerd_curl_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode issuerd_curl_setopt_list(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode issuerd_curl_setopt_read_function(CURL *curl, curl_read_callback function) {
    return curl_easy_setopt(curl, CURLOPT_READFUNCTION, function);
}
static inline CURLcode issuerd_curl_setopt_debug_function(CURL *curl, curl_debug_callback function) {
    return curl_easy_setopt(curl, CURLOPT_DEBUGFUNCTION, function);
}
static inline CURLcode issuerd_curl_getinfo_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}
#endif
