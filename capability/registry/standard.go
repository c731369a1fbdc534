package registry

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/schema"
)

// standardEntry is a reflected standard capability.
type standardEntry struct {
	cap      capability.Capability
	external bool
}

// standard reflects the standard catalog once; the result is never
// modified (callers get copies).
var standard = sync.OnceValue(func() []standardEntry {
	specs := capability.StandardSpecs()
	out := make([]standardEntry, len(specs))
	for i, s := range specs {
		out[i] = standardEntry{
			cap: capability.Capability{
				ID:          s.ID,
				Name:        s.Name,
				Description: s.Description,
				Args:        schema.Reflect(s.Args),
				Result:      schema.Open(schema.Reflect(s.Result)),
			},
			external: s.External,
		}
	}
	slices.SortFunc(out, func(a, b standardEntry) int { return strings.Compare(a.cap.ID, b.cap.ID) })
	return out
})

// Standard returns the standard catalog (capability.StandardSpecs) sorted by
// id. Each carries the JSON Schemas of its arguments (strict: unknown
// fields are refused) and result (further fields allowed).
func Standard() []capability.Capability {
	entries := standard()
	out := make([]capability.Capability, len(entries))
	for i, e := range entries {
		out[i] = cloneCapability(e.cap)
	}
	return out
}

// External reports whether id is a standard capability that a system outside
// the workspace fills (an ERP, a ledger, a chat tool) rather than a built-in
// app.
func External(id string) bool {
	for _, e := range standard() {
		if e.cap.ID == id {
			return e.external
		}
	}
	return false
}

func cloneCapability(c capability.Capability) capability.Capability {
	c.Args = bytes.Clone(c.Args)
	c.Result = bytes.Clone(c.Result)
	return c
}
