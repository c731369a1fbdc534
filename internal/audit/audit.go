// Package audit is the workspace's audit log: every change to access,
// adoption, automation, bindings and process definitions is written, in the
// same transaction as the change, with its actor, before and after, and
// reason.
package audit

import (
	"encoding/json"
	"time"

	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
)

// Entry is one audit record.
type Entry struct {
	ID       string          `json:"id"`
	At       time.Time       `json:"at"`
	Actor    string          `json:"actor"`
	Action   string          `json:"action"`
	Entity   string          `json:"entity"`
	EntityID string          `json:"entity_id"`
	Before   json.RawMessage `json:"before"`
	After    json.RawMessage `json:"after"`
	Reason   string          `json:"reason"`
}

// System is the actor of changes the workspace makes by itself (the ramp,
// the rollback, expiry).
const System = "system"

var entries = &store.Collection[Entry]{
	Name:     "audit",
	ID:       func(e *Entry) string { return e.ID },
	NotFound: "audit entry not found",
	Indexes: []store.Index[Entry]{
		{Name: "entity", Values: func(e *Entry) [][]any { return [][]any{{e.Entity, e.ID}} }},
		{Name: "actor", Values: func(e *Entry) [][]any { return [][]any{{e.Actor, e.ID}} }},
	},
}

// Marshal encodes v for Before or After; nil gives JSON null.
func Marshal(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// Write records e in tx under tenant. ID is made by gen from e.At when
// empty (so the entries one service writes at the same instant keep their
// order), and null Before/After are filled in.
func Write(tx store.Txn, tenant string, gen *ids.Generator, e Entry) error {
	if e.ID == "" {
		e.ID = gen.New("aud", e.At)
	}
	e.At = e.At.UTC()
	if e.Before == nil {
		e.Before = json.RawMessage("null")
	}
	if e.After == nil {
		e.After = json.RawMessage("null")
	}
	return entries.Put(tx, tenant, &e)
}

// Query filters List.
type Query struct {
	// Entity keeps entries about this kind of record ("api_key", "process").
	Entity string
	// Actor keeps entries by this actor.
	Actor string
	// Since keeps entries at or after this time.
	Since time.Time
}

// List returns one page of tenant's entries matching q, newest first, and
// the next cursor.
func List(r store.Reader, tenant string, q Query, p store.Page) ([]*Entry, string, error) {
	var (
		out  []*Entry
		next string
		err  error
	)
	switch {
	case q.Entity != "":
		out, next, err = entries.ListBy(r, tenant, "entity", []any{q.Entity}, p)
	case q.Actor != "":
		out, next, err = entries.ListBy(r, tenant, "actor", []any{q.Actor}, p)
	default:
		out, next, err = entries.List(r, tenant, p)
	}
	if err != nil {
		return nil, "", err
	}
	kept := out[:0]
	for _, e := range out {
		if q.Entity != "" && e.Entity != q.Entity || q.Actor != "" && e.Actor != q.Actor {
			continue
		}
		if !q.Since.IsZero() && e.At.Before(q.Since) {
			// Newest first: everything after this is older still.
			return kept, "", nil
		}
		kept = append(kept, e)
	}
	return kept, next, nil
}
