#pragma once

// OpenAI Responses replies (ReplyEncoder): the response object, whose output
// is a reasoning item (the reply's reasoning), a message item (its content,
// one output_text part) and a function_call item per tool call, in that
// order; its stream of response.created, response.in_progress,
// response.output_item.added / .done, response.content_part.added / .done,
// response.output_text.delta / .done, response.reasoning_text.delta / .done,
// response.function_call_arguments.delta / .done and response.completed (or
// response.incomplete at max_output_tokens), each with its sequence_number;
// errors as OpenAI's; SSE comments as keep-alives. A stored reply's
// conversation (its input items, then its output items) goes to the
// ResponseStore when it ends.

#include <memory>

#include "computed/serve/openai_json.h"
#include "computed/serve/reply_encoder.h"
#include "computed/serve/response_store.h"
#include "computed/serve/responses_request.h"

namespace warp::computed::serve {

// REQUIRES: `store` outlives the encoder.
std::unique_ptr<ReplyEncoder> MakeResponsesEncoder(ResponseHeader header,
                                                   const ResponsesRequest& request,
                                                   ResponseStore& store);

}  // namespace warp::computed::serve
