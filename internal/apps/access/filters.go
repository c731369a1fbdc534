package access

import (
	"context"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// MaxSavedFilters bounds the inbox filters a person keeps.
const MaxSavedFilters = 20

// InboxFilter is one saved view of the inbox: each set field keeps the
// items that match it.
type InboxFilter struct {
	// Kind is task, approval or document; empty keeps every kind.
	Kind string `json:"kind,omitempty" jsonschema:"enum=,enum=task,enum=approval,enum=document"`
	// Process is a process id.
	Process string `json:"process,omitempty" jsonschema:"maxLength=100"`
	// Function is a process's function.
	Function string `json:"function,omitempty" jsonschema:"maxLength=100"`
	// Queue is a document's review queue.
	Queue string `json:"queue,omitempty" jsonschema:"maxLength=100"`
	// Assignee is a task's assignee.
	Assignee string `json:"assignee,omitempty" jsonschema:"maxLength=320"`
	// Risk is an approval's risk.
	Risk string `json:"risk,omitempty" jsonschema:"enum=,enum=low,enum=medium,enum=high"`
	// Mine keeps the tasks assigned to the person.
	Mine bool `json:"mine,omitempty"`
	// Unassigned keeps the tasks assigned to nobody.
	Unassigned bool `json:"unassigned,omitempty"`
}

// NoExtraProperties makes an unknown field of InboxFilter a 422.
func (InboxFilter) NoExtraProperties() {}

// SavedFilter is a named InboxFilter.
type SavedFilter struct {
	Name   string      `json:"name" jsonschema:"required,minLength=1,maxLength=100"`
	Filter InboxFilter `json:"filter" jsonschema:"required"`
}

// NoExtraProperties makes an unknown field of SavedFilter a 422.
func (SavedFilter) NoExtraProperties() {}

// SavedFilters are a person's saved inbox filters, in the order they
// were saved.
type SavedFilters struct {
	Filters   []SavedFilter `json:"filters" jsonschema:"required,maxItems=20"`
	UpdatedAt *time.Time    `json:"updated_at,omitempty" jsonschema:"readOnly"`
}

// NoExtraProperties makes an unknown field of SavedFilters a 422.
func (SavedFilters) NoExtraProperties() {}

// savedFilters is the stored record, one per person.
type savedFilters struct {
	UserID    string        `json:"user_id"`
	Filters   []SavedFilter `json:"filters"`
	UpdatedAt time.Time     `json:"updated_at"`
}

var filterSets = &store.Collection[savedFilters]{
	Name:     "inbox-filters",
	ID:       func(f *savedFilters) string { return f.UserID },
	NotFound: "no saved filters",
}

// InboxFilters returns the inbox filters person userID saved (none yet:
// an empty list).
func (s *Service) InboxFilters(ctx context.Context, tenant, userID string) (*SavedFilters, error) {
	out := &SavedFilters{Filters: []SavedFilter{}}
	err := s.st.View(ctx, func(r store.Reader) error {
		f, err := filterSets.Get(r, tenant, userID)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out.Filters, out.UpdatedAt = f.Filters, &f.UpdatedAt
		return nil
	})
	return out, err
}

// SetInboxFilters replaces the inbox filters of person userID (checked
// by the caller against SavedFilters' schema; a name saved twice keeps the
// last) and returns them as kept.
func (s *Service) SetInboxFilters(ctx context.Context, tenant, userID string, filters []SavedFilter) (*SavedFilters, error) {
	kept := []SavedFilter{}
	seen := map[string]int{}
	for _, f := range filters {
		if i, ok := seen[f.Name]; ok {
			kept[i] = f
			continue
		}
		seen[f.Name] = len(kept)
		kept = append(kept, f)
	}
	now := s.now()
	rec := &savedFilters{UserID: userID, Filters: kept, UpdatedAt: now}
	err := s.st.Update(ctx, func(tx store.Txn) error { return filterSets.Put(tx, tenant, rec) })
	if err != nil {
		return nil, err
	}
	return &SavedFilters{Filters: kept, UpdatedAt: &rec.UpdatedAt}, nil
}
