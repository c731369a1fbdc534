package capability

import "context"

// The ids of the language-model capabilities. Nothing fills them by default:
// a workspace binds them to the chat-completions connector (internal/ai)
// once it has configured its AI connection, and the intake, route and draft
// steps use them only when their config asks for AI.
const (
	AIComplete = "ai.complete"
	AIExtract  = "ai.extract"
	AIClassify = "ai.classify"
	AIDraft    = "ai.draft"
)

// AIMessage is one message of a conversation with a language model.
type AIMessage struct {
	Role    string `json:"role" jsonschema:"required,enum=system,enum=user,enum=assistant"`
	Content string `json:"content" jsonschema:"required,maxLength=200000"`
}

// AIUsage counts the tokens one call used, as the model reported them.
type AIUsage struct {
	PromptTokens     int64 `json:"prompt_tokens" jsonschema:"required,minimum=0"`
	CompletionTokens int64 `json:"completion_tokens" jsonschema:"required,minimum=0"`
	TotalTokens      int64 `json:"total_tokens" jsonschema:"required,minimum=0"`
}

// AIMeta says who answered an ai.* call: the provider, the model and the
// tokens used. Every ai.* result carries it, so a step's output records it.
type AIMeta struct {
	Provider string  `json:"provider" jsonschema:"required"`
	Model    string  `json:"model" jsonschema:"required"`
	Usage    AIUsage `json:"usage" jsonschema:"required"`
	// Attempts is how many requests the answer took (rate limits, server
	// errors and invalid answers are retried).
	Attempts int `json:"attempts" jsonschema:"required,minimum=1"`
}

// AICompleteArgs are the arguments of ai.complete: a prompt, or a
// conversation, to continue. Exactly one of Prompt and Messages is given.
type AICompleteArgs struct {
	Prompt      string      `json:"prompt,omitempty" jsonschema:"maxLength=200000"`
	System      string      `json:"system,omitempty" jsonschema:"maxLength=20000"`
	Messages    []AIMessage `json:"messages,omitempty" jsonschema:"maxItems=200"`
	MaxTokens   int         `json:"max_tokens,omitempty" jsonschema:"minimum=1,maximum=32768"`
	Temperature *float64    `json:"temperature,omitempty" jsonschema:"minimum=0,maximum=2"`
}

// AICompleteResult is the result of ai.complete.
type AICompleteResult struct {
	Text string `json:"text" jsonschema:"required"`
	// FinishReason is the model's: stop, length, content_filter ...
	FinishReason string `json:"finish_reason" jsonschema:"required"`
	AI           AIMeta `json:"ai" jsonschema:"required"`
}

// AIField is one field ai.extract looks for.
type AIField struct {
	Key         string   `json:"key" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,39}$"`
	Label       string   `json:"label" jsonschema:"required,minLength=1,maxLength=120"`
	Type        string   `json:"type,omitempty" jsonschema:"enum=text,enum=number,enum=money,enum=date,enum=email,enum=enum"`
	Description string   `json:"description,omitempty" jsonschema:"maxLength=500"`
	Options     []string `json:"options,omitempty" jsonschema:"maxItems=100"`
	Required    bool     `json:"required,omitempty"`
}

// AIExtractArgs are the arguments of ai.extract: the text to read and the
// fields to find in it.
type AIExtractArgs struct {
	Text         string    `json:"text" jsonschema:"required,minLength=1,maxLength=200000"`
	Fields       []AIField `json:"fields" jsonschema:"required,minItems=1,maxItems=100"`
	Instructions string    `json:"instructions,omitempty" jsonschema:"maxLength=4000"`
}

// AIExtractValue is one extracted value with its evidence, in the shape the
// documents app gives label and regex extraction: Value is parsed from Text
// (strings for text, date YYYY-MM-DD, email and enum; a number; money as
// integer cents), and Text is the quoted span at code-point offsets
// [Start, End) of the text given.
type AIExtractValue struct {
	Value any    `json:"value" jsonschema:"required"`
	Text  string `json:"text" jsonschema:"required"`
	Start int    `json:"start" jsonschema:"required,minimum=0"`
	End   int    `json:"end" jsonschema:"required,minimum=0"`
}

// AIExtractProblem is a field ai.extract did not extract: kind missing (the
// model found nothing) or type (the quoted text does not parse as the
// field's type, or is not one of its options).
type AIExtractProblem struct {
	Field   string `json:"field" jsonschema:"required"`
	Kind    string `json:"kind" jsonschema:"required,enum=missing,enum=type"`
	Message string `json:"message" jsonschema:"required"`
	Text    string `json:"text,omitempty"`
}

// AIExtractResult is the result of ai.extract.
type AIExtractResult struct {
	Values   map[string]AIExtractValue `json:"values" jsonschema:"required"`
	Problems []AIExtractProblem        `json:"problems" jsonschema:"required"`
	// Missing lists the keys of required fields that were not extracted.
	Missing []string `json:"missing" jsonschema:"required"`
	AI      AIMeta   `json:"ai" jsonschema:"required"`
}

// AILabel is one label ai.classify may choose.
type AILabel struct {
	Label       string `json:"label" jsonschema:"required,minLength=1,maxLength=80"`
	Description string `json:"description,omitempty" jsonschema:"maxLength=500"`
}

// AIClassifyArgs are the arguments of ai.classify: the text and the labels
// to choose from.
type AIClassifyArgs struct {
	Text         string    `json:"text" jsonschema:"required,minLength=1,maxLength=200000"`
	Labels       []AILabel `json:"labels" jsonschema:"required,minItems=2,maxItems=50"`
	Instructions string    `json:"instructions,omitempty" jsonschema:"maxLength=4000"`
}

// AIClassifyResult is the result of ai.classify: one of the labels given,
// the model's confidence in it (0 to 1) and its reason.
type AIClassifyResult struct {
	Label      string  `json:"label" jsonschema:"required"`
	Confidence float64 `json:"confidence" jsonschema:"required,minimum=0,maximum=1"`
	Reason     string  `json:"reason" jsonschema:"required"`
	AI         AIMeta  `json:"ai" jsonschema:"required"`
}

// AIDraftArgs are the arguments of ai.draft: what to write (a reply, a
// report or a quote), the brief, and the run's data it draws on.
type AIDraftArgs struct {
	Kind     string         `json:"kind" jsonschema:"required,enum=reply,enum=report,enum=quote,enum=other"`
	Brief    string         `json:"brief" jsonschema:"required,minLength=1,maxLength=50000"`
	Data     map[string]any `json:"data,omitempty"`
	Tone     string         `json:"tone,omitempty" jsonschema:"maxLength=200"`
	MaxWords int            `json:"max_words,omitempty" jsonschema:"minimum=1,maximum=10000"`
}

// AIDraftResult is the result of ai.draft.
type AIDraftResult struct {
	Subject string `json:"subject" jsonschema:"required"`
	Text    string `json:"text" jsonschema:"required,minLength=1"`
	AI      AIMeta `json:"ai" jsonschema:"required"`
}

// aiSpecs declares the language-model capabilities of the standard catalog.
func aiSpecs() []StandardSpec {
	return []StandardSpec{
		{AIComplete, "Complete text with AI", "Sends a prompt, or a conversation, to the workspace's language model and returns its answer.", &AICompleteArgs{}, &AICompleteResult{}, true},
		{AIExtract, "Extract fields with AI", "Finds fields in a text with the workspace's language model; each value comes with the quoted span it was read from (text, start, end), checked against the text.", &AIExtractArgs{}, &AIExtractResult{}, true},
		{AIClassify, "Classify text with AI", "Chooses one of the labels given for a text with the workspace's language model, with a confidence and a reason.", &AIClassifyArgs{}, &AIClassifyResult{}, true},
		{AIDraft, "Draft with AI", "Writes a reply, report or quote from a brief and the run's data with the workspace's language model.", &AIDraftArgs{}, &AIDraftResult{}, true},
	}
}

// tenantKey carries the tenant a request acts for in a context.
type tenantKey struct{}

// WithTenant returns ctx carrying tenant. GET /v1/connections asks health
// checks under it, so a provider configured per workspace (the AI
// connector) reports the asking workspace's state.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant WithTenant put in ctx, if any.
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}
