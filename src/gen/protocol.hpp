// The four wire protocols: the request a model gets and how its answer or error reads.
#pragma once

#include <stdexcept>
#include <string>

#include "gen/http.hpp"
#include "gen/messages.hpp"
#include "gen/models.hpp"

namespace pkb::gen {

// A 2xx answer that is not the protocol's JSON (cut off, or another shape).
struct MalformedResponse : std::runtime_error {
  using std::runtime_error::runtime_error;
};

HttpRequest build_request(const Model& m, const std::string& key, const Prompt& p);
// Several turns: every protocol gets the whole conversation (none keeps state between requests).
HttpRequest build_request(const Model& m, const std::string& key, const Conversation& c);

// Throws MalformedResponse.
Completion parse_completion(Protocol protocol, const std::string& body);

// The provider's own words from an error body, on one line; else the body's start.
std::string error_message(const std::string& body);

// An HTTP error no retry can fix and no other request of the model would escape: a bad
// or unauthorised key, an unknown model (401, 403, 404; Gemini's 400 API_KEY_INVALID).
bool stops_the_model(long status, const std::string& body);

// The text with every occurrence of `secret` replaced, for anything written or printed.
std::string redact(std::string text, const std::string& secret);

}  // namespace pkb::gen
