package bas

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// CallParams call a capability from Go (see Call).
type CallParams struct {
	// Tenant is the workspace the call acts for. Required.
	Tenant string
	// Capability is the capability id (document.validate,
	// decision.record, task.create ...). Required.
	Capability string
	// Args are the arguments: any value that encodes to the JSON object
	// the capability's schema describes (a struct with json tags, a map).
	Args any
	// IdempotencyKey, when set, lets the provider act at most once for
	// calls that repeat it.
	IdempotencyKey string
}

// Call calls a capability of the workspace with typed arguments and
// decodes its result into T: the door through which Go code reaches the
// workspace apps (documents, decisions, tasks, email ...) and every
// provider, exactly as a process step does. The registry checks the
// arguments and the result against the capability's schemas: bad arguments
// are ErrInvalid (see Violations), an unknown capability too.
//
//	type validated struct{ Status string `json:"status"` }
//	out, err := bas.Call[validated](ctx, ws, bas.CallParams{Tenant: "acme",
//		Capability: "document.validate", Args: map[string]any{"document_id": id}})
func Call[T any](ctx context.Context, ws *Workspace, p CallParams) (T, error) {
	var out T
	args, err := json.Marshal(p.Args)
	if err != nil {
		return out, withKind(errs.Invalidf([]any{"args"}, "type_error", "cannot be encoded as JSON: %v", err))
	}
	if p.Args == nil {
		args = []byte(`{}`)
	}
	raw, err := ws.registry.Call(ctx, capability.Call{Tenant: p.Tenant, Capability: p.Capability, Args: args,
		IdempotencyKey: p.IdempotencyKey})
	if err != nil {
		return out, withKind(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, errors.Wrapf(err, "decode the result of %s into %T", p.Capability, out)
	}
	return out, nil
}
