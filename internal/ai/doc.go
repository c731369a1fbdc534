// Package ai is the workspace's language-model connector: each workspace's
// AI connection (an OpenAI-compatible chat-completions endpoint, its model,
// its API key sealed with AES-256-GCM and never returned, timeouts, retries,
// a monthly token budget and redaction), the token usage of every call and
// month, and the provider that fills ai.complete, ai.extract, ai.classify
// and ai.draft through it.
//
// The protocol is POST {base_url}/chat/completions as hosted APIs and local
// servers (Ollama, vLLM, llama.cpp's server) speak it. Structured answers
// are asked for with response_format {type: json_schema, json_schema:
// {name, strict: true, schema}} and checked: an answer that is not the JSON
// asked for, quotes text that is not there or picks a label that was not
// offered is an ErrInvalidAnswer error, which a run retries; it never
// passes as a result. 429 and 5xx are retried honouring Retry-After.
package ai
