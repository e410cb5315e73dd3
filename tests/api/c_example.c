/* Generates a reply from a .warp model through libwarp: c_example MODEL.warp */
#include <stdio.h>
#include <string.h>

#include "computed/api/warp.h"

static int print_text(void* user_data, int32_t token, const char* text, size_t text_len) {
  (void)user_data;
  (void)token;
  fwrite(text, 1, text_len, stdout);
  return 0; /* nonzero stops the generation */
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  warp_model_options options;
  warp_model_options_init(&options);
  options.path = argv[1];
  options.budget_bytes = 64u << 20; /* trunk + KV + expert cache */

  warp_model* model = NULL;
  warp_session* session = NULL;
  char* prompt = NULL;
  int32_t* ids = NULL;
  size_t num_ids = 0;
  warp_generate_options generate;
  warp_generate_options_init(&generate);
  generate.max_tokens = 24;

  warp_status status = warp_model_open(&options, &model);
  if (status == WARP_OK) {
    status = warp_apply_chat_template(
        model, "[{\"role\": \"user\", \"content\": \"Who made the heaven?\"}]",
        /*add_generation_prompt=*/1, /*tools_json=*/NULL, /*template_kwargs_json=*/NULL, &prompt,
        NULL);
  }
  if (status == WARP_OK) status = warp_tokenize(model, prompt, strlen(prompt), 0, &ids, &num_ids);
  if (status == WARP_OK) status = warp_session_create(model, &session);
  if (status == WARP_OK) status = warp_session_prefill(session, ids, num_ids);
  if (status == WARP_OK) {
    status = warp_session_generate(session, &generate, print_text, NULL, NULL, NULL);
  }
  if (status == WARP_OK) {
    char* stats = NULL;
    if (warp_session_stats_line(session, &stats) == WARP_OK) printf("\n%s\n", stats);
    warp_free(stats);
  } else {
    fprintf(stderr, "%s: %s\n", warp_status_name(status), warp_last_error());
  }
  warp_free(ids);
  warp_free(prompt);
  warp_session_free(session);
  warp_model_close(model);
  return status == WARP_OK ? 0 : 1;
}
