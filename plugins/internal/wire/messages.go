package wire

import "encoding/json"

// Info describes a provider (capability.Info on the wire).
type Info struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	Capabilities []string `json:"capabilities"`
	App          *App     `json:"app,omitempty"`
	Coming       bool     `json:"coming,omitempty"`
}

// App describes the app a provider brings (capability.App on the wire).
type App struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	API          API      `json:"api"`
	Events       Events   `json:"events"`
	Capabilities []string `json:"capabilities"`
}

// API is an app's HTTP surface (capability.API on the wire).
type API struct {
	Prefix string `json:"prefix"`
}

// Events lists the events an app emits and consumes (capability.Events on
// the wire).
type Events struct {
	Emits    []string `json:"emits"`
	Consumes []string `json:"consumes"`
}

// Capability describes one capability a provider brings
// (capability.Capability on the wire).
type Capability struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Args        json.RawMessage `json:"args_schema"`
	Result      json.RawMessage `json:"result_schema"`
}

// Call is one capability invocation (capability.Call on the wire).
type Call struct {
	Tenant         string          `json:"tenant"`
	Capability     string          `json:"capability"`
	Args           json.RawMessage `json:"args"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// Health is a provider's live state (capability.Health on the wire).
type Health struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Event is an event a provider sends to the workspace (capability.Event on
// the wire).
type Event struct {
	Tenant string          `json:"tenant"`
	Name   string          `json:"name"`
	Data   json.RawMessage `json:"data"`
}

// Violation is one reason arguments were refused (errs.Violation on the
// wire).
type Violation struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}
